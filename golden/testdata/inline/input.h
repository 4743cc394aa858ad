/* A library whose public functions are static inline wrappers around
   versioned symbols, as nvJitLink.h declares them. */
typedef enum cudaError_enum { cudaSuccess = 0, cudaErrorInvalidValue = 1 } cudaError_t;
typedef struct cudaLinker *cudaLinker_t;

extern cudaError_t __cudaLinkerCreate_2_1(cudaLinker_t *linker, unsigned int n, const char * const *options);
/**
 * \brief cudaLinkerCreate makes a linker.
 *
 * \param [out] linker The new linker.
 * \param [in]  n      The number of options.
 * \param [in]  options The options.
 * \return \link #cudaError_t cudaSuccess \endlink
 */
#ifndef NO_INLINE
static inline cudaError_t cudaLinkerCreate(cudaLinker_t *linker, unsigned int n, const char **options)
{
  return __cudaLinkerCreate_2_1 (linker, n, options);
}
#endif

extern cudaError_t __cudaLinkerDestroy_2_1(cudaLinker_t *linker);
/** \brief cudaLinkerDestroy frees a linker. */
static inline cudaError_t cudaLinkerDestroy(cudaLinker_t *linker)
{
  return __cudaLinkerDestroy_2_1(linker);
}

/* Not a wrapper: its body does more than return a call, so it is skipped
   like any other definition, and the symbol it calls keeps its own name. */

extern int cudaLinkerCount_2_1(void);
static inline int cudaLinkerTwice(void)
{
  int n = cudaLinkerCount_2_1();
  return 2 * n;
}

/** \brief cudaLinkerVersion is exported under its own name. */
extern cudaError_t cudaLinkerVersion(int *major, int *minor);
