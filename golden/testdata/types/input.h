/* Types: enums, structs, unions, arrays, handles, function pointers. */
#include <stddef.h>

/**
 * \brief Kinds of widget, with a negative and a hex value
 */
enum cudaWidgetKind {
    cudaWidgetNone = 0,      /**< No widget */
    cudaWidgetSmall = 0x10,  /**< A small widget */
    /**
     * A negative value, documented above.
     */
    cudaWidgetBroken = -1,
    cudaWidgetAlias = 0x10   /**< Same value as ::cudaWidgetSmall */
};

/**
 * An anonymous enum named by its typedef.
 */
typedef enum {
    cudaFlagA = 1,
    cudaFlagB = 2
} cudaFlags_t;

/** A struct nested by value. */
struct cudaInner {
    char tag;        /**< One byte, then padding */
    long long value; /**< Eight bytes at offset 8 */
};

/**
 * \brief A struct with an array, a nested struct, a named anonymous struct
 * and an anonymous union.
 */
struct cudaOuter {
    int dims[3];              /**< An array */
    struct cudaInner inner;   /**< A nested struct */
    struct {
        short x, y;
    } point;                  /**< An anonymous struct type, named by the field */
    union {
        float f;
        unsigned int u;
        unsigned char bytes[4];
    };                        /**< An anonymous union member */
    size_t size;
    char name[5];             /**< Trailing padding follows */
};

/**
 * Anonymous unions: one whose first member holds a pointer, and one that
 * starts with a nested anonymous union and holds an anonymous struct.
 */
struct cudaVariant {
    int kind;
    union {
        void *ptr;                /**< A pointer, so an accessor */
        unsigned long long bits;
    };
    union {
        union {
            short half;           /**< First of the nested union: a field */
            char low;
        };
        struct {
            char lo, hi;
        };                        /**< An anonymous struct in an anonymous union */
        int whole;
    };
};

/** A union on its own. */
typedef union cudaValue_u {
    double d;
    int i[3];
} cudaValue;

/** Over-aligned, like CUDA's vector types. */
struct __attribute__((aligned(8))) cudaPair {
    int a, b;
};

/** An opaque handle. */
typedef struct CUwidget_st *cudaWidget_t;

/** A function pointer type. */
typedef void (*cudaWidgetCallback_t)(cudaWidget_t widget, void *userData);

/** A scalar typedef. */
typedef unsigned long long cudaWidgetId_t;

/** A typedef of a tagged struct with another name. */
typedef struct cudaInner cudaInnerAlias;

/**
 * A union whose members hold pointers: a struct of them (one typed, an
 * array of two), a nested struct without, and integers.
 */
union cudaPointers {
    struct {
        void *host;
        struct cudaInner *inner;
        int *each[2];
        struct cudaInner plain;
    } copy;                   /**< Pointers at depth: a setter pins them */
    struct cudaInner none;    /**< No pointer: no setter */
    unsigned long long bits[5];
};

/** A handle to a const struct: an alias of the plain handle in Go. */
typedef const struct CUwidget_st *cudaWidget_const_t;
