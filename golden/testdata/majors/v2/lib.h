/* Version 2 of a library: a field, a function and an enumerator more. */
typedef enum libStatus { LIB_SUCCESS = 0, LIB_ERROR = 1, LIB_ERROR_NEW = 2 } libStatus_t;

#define LIB_VERSION 2000

struct libInfo {
    int major;
    int minor;
    long long size;
};

/** Get the library's information. */
libStatus_t libGetInfo(struct libInfo *info);

/** Reset the library, new in version 2. */
libStatus_t libReset(void);
