/* Version 1 of a library: one set of generated files per major. */
typedef enum libStatus { LIB_SUCCESS = 0, LIB_ERROR = 1 } libStatus_t;

#define LIB_VERSION 1000

struct libInfo {
    int major;
    long long size;
};

/** Get the library's information. */
libStatus_t libGetInfo(struct libInfo *info);
