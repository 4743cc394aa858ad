// A minimal NVTX injection library for package nvtx's tests.
//
// NVTX 3 loads it from $NVTX_INJECTION64_PATH and calls
// InitializeInjectionNvtx2, which replaces NVTX's MarkEx, MarkA,
// RangePushEx, RangePushA and RangePop with functions that append one line
// per event to the file named by $NVTX_TEST_LOG:
//
//	kind TAB level TAB thread TAB attributes TAB message NL
//
// level is "-" for marks; attributes is empty for the A functions. The
// first line, kind Init, gives the size of this file's event attributes.
//
// The file is self-contained (the test binary compiles it where there are
// no NVTX headers): the declarations below restate what it needs from the
// NVTX 3 headers shipped in headers/cuda-13.0/nvtx3.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

// From nvtxDetail/nvtxTypes.h.
typedef void (*NvtxFunctionPointer)(void);
typedef NvtxFunctionPointer **NvtxFunctionTable;
typedef const void *(*NvtxGetExportTableFunc_t)(uint32_t exportTableId);
typedef struct NvtxExportTableCallbacks {
	size_t struct_size;
	int (*GetModuleFunctionTable)(int callback_module, NvtxFunctionTable *out_table,
				      unsigned int *out_size);
} NvtxExportTableCallbacks;

enum { NVTX_ETID_CALLBACKS = 1 };  // NvtxExportTableID
enum { NVTX_CB_MODULE_CORE = 1 };  // NvtxCallbackModule
enum {                             // NvtxCallbackIdCore
	NVTX_CBID_CORE_MarkEx = 1,
	NVTX_CBID_CORE_MarkA = 2,
	NVTX_CBID_CORE_RangePushEx = 8,
	NVTX_CBID_CORE_RangePushA = 9,
	NVTX_CBID_CORE_RangePop = 11,
};

// From nvToolsExt.h: nvtxEventAttributes_v2 and its message union.
typedef struct nvtxEventAttributes_v2 {
	uint16_t version;
	uint16_t size;
	uint32_t category;
	int32_t colorType;
	uint32_t color;
	int32_t payloadType;
	int32_t reserved0;
	union {
		uint64_t ullValue;
		int64_t llValue;
		double dValue;
	} payload;
	int32_t messageType;
	union {
		const char *ascii;
		const void *unicode;
		const void *registered;
	} message;
} nvtxEventAttributes_t;

enum { NVTX_MESSAGE_TYPE_ASCII = 1 };  // nvtxMessageType_t

static int logfd = -1;
static __thread int depth;  // NVTX ranges nest per thread.

static void record(const char *kind, int level, const nvtxEventAttributes_t *a, const char *msg)
{
	char lv[16] = "-", attr[128] = "";
	if (level != -100) {
		snprintf(lv, sizeof lv, "%d", level);
	}
	if (a != NULL) {
		snprintf(attr, sizeof attr, "version=%u size=%u colorType=%d color=%08x messageType=%d",
			 a->version, a->size, a->colorType, a->color, a->messageType);
		msg = a->messageType == NVTX_MESSAGE_TYPE_ASCII ? a->message.ascii : "<not ascii>";
	}
	if (msg == NULL) {
		msg = "<null>";
	}
	dprintf(logfd, "%s\t%s\t%ld\t%s\t%s\n", kind, lv, (long)syscall(SYS_gettid), attr, msg);
}

static void markEx(const nvtxEventAttributes_t *a) { record("MarkEx", -100, a, NULL); }

static void markA(const char *msg) { record("MarkA", -100, NULL, msg); }

static int rangePushEx(const nvtxEventAttributes_t *a)
{
	record("RangePushEx", depth, a, NULL);
	return depth++;
}

static int rangePushA(const char *msg)
{
	record("RangePushA", depth, NULL, msg);
	return depth++;
}

static int rangePop(void)
{
	int level = depth > 0 ? --depth : -1;
	record("RangePop", level, NULL, "");
	return level;
}

__attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t getExportTable)
{
	const char *path = getenv("NVTX_TEST_LOG");
	if (path == NULL || getExportTable == NULL) {
		return 0;
	}
	const NvtxExportTableCallbacks *cb = getExportTable(NVTX_ETID_CALLBACKS);
	if (cb == NULL || cb->struct_size < sizeof *cb || cb->GetModuleFunctionTable == NULL) {
		return 0;
	}
	NvtxFunctionTable table = NULL;
	unsigned int size = 0;
	if (!cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &table, &size) || table == NULL ||
	    size <= NVTX_CBID_CORE_RangePop) {
		return 0;
	}
	logfd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (logfd < 0) {
		return 0;
	}
	*table[NVTX_CBID_CORE_MarkEx] = (NvtxFunctionPointer)markEx;
	*table[NVTX_CBID_CORE_MarkA] = (NvtxFunctionPointer)markA;
	*table[NVTX_CBID_CORE_RangePushEx] = (NvtxFunctionPointer)rangePushEx;
	*table[NVTX_CBID_CORE_RangePushA] = (NvtxFunctionPointer)rangePushA;
	*table[NVTX_CBID_CORE_RangePop] = (NvtxFunctionPointer)rangePop;
	char self[64];
	snprintf(self, sizeof self, "sizeof(nvtxEventAttributes_t)=%zu", sizeof(nvtxEventAttributes_t));
	record("Init", -100, NULL, self);
	return 1;
}
