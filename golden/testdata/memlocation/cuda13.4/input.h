/* CUmemLocation as CUDA 13.4's cuda.h declares it: the anonymous union
 * holding id has a second member, localized, a struct of two bytes. */

typedef enum CUmemLocationType_enum {
    CU_MEM_LOCATION_TYPE_INVALID = 0x0,
    CU_MEM_LOCATION_TYPE_DEVICE = 0x1, /**< id is a device ordinal */
    CU_MEM_LOCATION_TYPE_DEVICE_LOCALITY_DOMAIN = 0x6 /**< localized names the device and the domain */
} CUmemLocationType;

/** A memory location. */
typedef struct CUmemLocation_st {
    CUmemLocationType type; /**< What the location is */
    union {
        int id;             /**< Which one of its type */
        struct {
            unsigned char deviceId;         /**< The device */
            unsigned char localityDomainId; /**< The locality domain in it */
        } localized;        /**< For CU_MEM_LOCATION_TYPE_DEVICE_LOCALITY_DOMAIN */
    };
} CUmemLocation_v1;
typedef CUmemLocation_v1 CUmemLocation;
