/* CUmemLocation as CUDA 13.2's cuda.h declares it: id is the only member of
 * an anonymous union. */

typedef enum CUmemLocationType_enum {
    CU_MEM_LOCATION_TYPE_INVALID = 0x0,
    CU_MEM_LOCATION_TYPE_DEVICE = 0x1 /**< id is a device ordinal */
} CUmemLocationType;

/** A memory location. */
typedef struct CUmemLocation_st {
    CUmemLocationType type; /**< What the location is */
    union {
        int id;             /**< Which one of its type */
    };
} CUmemLocation_v1;
typedef CUmemLocation_v1 CUmemLocation;
