// The only translation unit of package nvtx that includes the NVTX 3
// header, which defines NVTX's functions and its lazy loader inline.
#include <stdlib.h>
#include <string.h>

#include "nvtx3/nvToolsExt.h"

#include "shim.h"

// nvtx.go's NoPushPopTracking.
_Static_assert(NVTX_NO_PUSH_POP_TRACKING == -2, "NVTX_NO_PUSH_POP_TRACKING changed");

// cstr returns msg[:n] as a C string: in buf (GOCUDA_NVTX_STACK bytes) when
// it fits, else in *heap, which the caller frees. When malloc fails, the
// message is cut to what buf holds.
static const char *cstr(const char *msg, size_t n, char *buf, char **heap)
{
	*heap = NULL;
	if (n >= GOCUDA_NVTX_STACK) {
		*heap = malloc(n + 1);
		if (*heap != NULL) {
			memcpy(*heap, msg, n);
			(*heap)[n] = '\0';
			return *heap;
		}
		n = GOCUDA_NVTX_STACK - 1;
	}
	if (n > 0) {
		memcpy(buf, msg, n);
	}
	buf[n] = '\0';
	return buf;
}

static void attrs(nvtxEventAttributes_t *a, const char *msg, uint32_t argb)
{
	memset(a, 0, sizeof *a);
	a->version = NVTX_VERSION;
	a->size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a->colorType = NVTX_COLOR_ARGB;
	a->color = argb;
	a->messageType = NVTX_MESSAGE_TYPE_ASCII;
	a->message.ascii = msg;
}

void gocuda_nvtxMark(const char *msg, size_t n)
{
	char buf[GOCUDA_NVTX_STACK], *heap;
	nvtxMarkA(cstr(msg, n, buf, &heap));
	free(heap);
}

void gocuda_nvtxMarkC(const char *msg, size_t n, uint32_t argb)
{
	char buf[GOCUDA_NVTX_STACK], *heap;
	nvtxEventAttributes_t a;
	attrs(&a, cstr(msg, n, buf, &heap), argb);
	nvtxMarkEx(&a);
	free(heap);
}

int gocuda_nvtxRangePush(const char *msg, size_t n)
{
	char buf[GOCUDA_NVTX_STACK], *heap;
	int level = nvtxRangePushA(cstr(msg, n, buf, &heap));
	free(heap);
	return level;
}

int gocuda_nvtxRangePushC(const char *msg, size_t n, uint32_t argb)
{
	char buf[GOCUDA_NVTX_STACK], *heap;
	nvtxEventAttributes_t a;
	attrs(&a, cstr(msg, n, buf, &heap), argb);
	int level = nvtxRangePushEx(&a);
	free(heap);
	return level;
}

int gocuda_nvtxRangePop(void)
{
	return nvtxRangePop();
}
