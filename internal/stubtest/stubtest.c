#include <stddef.h>
#include "_cgo_export.h"

void gocudaStubtestBLASLogger(const char *msg) { gocudaStubtestLog((char *)msg, 0); }

void gocudaStubtestDriverLogger(void *data, int level, char *message, size_t length) {
	gocudaStubtestLog(message, length);
}
