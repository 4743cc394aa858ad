/* CUmemLocation as CUDA 13.0's cuda.h declares it: id is a plain field.
 * 13.2 and 13.4 move it into an anonymous union (see ../cuda13.2 and
 * ../cuda13.4); the same Go source uses each (../_program). */

typedef enum CUmemLocationType_enum {
    CU_MEM_LOCATION_TYPE_INVALID = 0x0,
    CU_MEM_LOCATION_TYPE_DEVICE = 0x1 /**< id is a device ordinal */
} CUmemLocationType;

/** A memory location. */
typedef struct CUmemLocation_st {
    CUmemLocationType type; /**< What the location is */
    int id;                 /**< Which one of its type */
} CUmemLocation_v1;
typedef CUmemLocation_v1 CUmemLocation;
