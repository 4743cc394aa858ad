/* Constants: #define with integer, hex, unsigned, negative, float and string values. */

/** The API version */
#define CUDART_VERSION 13000
#define cudaHostAllocMapped 0x02 /**< A hex flag */
#define cudaBigMask 0xffffffffffffffffULL
#define cudaCpuDeviceId ((int)-1)
#define CUDA_SCALE 1.5f
#define CUDA_NAME "widget"
#define CUDA_SHIFTED (1 << 4)
/** Not a constant */
#define CUDA_ATTRIBUTE __attribute__((unused))
typedef int cudaCount_t;
/** A type spelled by a macro */
#define cudaCountAlias cudaCount_t
