// The fake's CUDA IPC (see driver.c): handles that name device memory and
// events, in the driver's 64-byte form. The fake's device memory is the
// process's own, so it cannot map another process's: as the driver, it
// refuses to open a handle in the process that exported it, unless a test
// asks it to (fakecu_ipc_same_process), which then maps the memory itself,
// so that the lifetime of an opened buffer can be tested.

#include "fakecuda.h"

typedef struct { unsigned char bytes[64]; } ipc_handle;

struct ipc_content {
	char magic[8]; // "gcudaIPm" or "gcudaIPe"
	int64_t pid;
	uint64_t ptr; // the allocation's base, or the event
	uint64_t size;
};

long live_ipc;
static int same_process;

// The opened mappings, for cuIpcCloseMemHandle.
#define MAX_MAPPINGS 256
static uintptr_t mappings[MAX_MAPPINGS];

EXPORT void fakecu_ipc_same_process(int on) { same_process = on; }

EXPORT CUresult cuIpcGetMemHandle(ipc_handle *h, CUdeviceptr p) {
	FAULT("cuIpcGetMemHandle");
	REQUIRE_CTX();
	if (!h) return INVALID_VALUE;
	pthread_mutex_lock(&mu);
	struct record *r = find_base((uintptr_t)p, KIND_DEVICE);
	// Stream-ordered memory needs a pool made for export: not this call.
	int ok = r && !r->ordered && !r->pool && r->ctx == current;
	struct ipc_content c = {.pid = getpid(), .ptr = p, .size = ok ? r->size : 0};
	pthread_mutex_unlock(&mu);
	if (!ok) return INVALID_VALUE;
	memcpy(c.magic, "gcudaIPm", 8);
	memset(h, 0, sizeof *h);
	memcpy(h, &c, sizeof c);
	return SUCCESS;
}

EXPORT CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *p, ipc_handle h, unsigned int flags) {
	FAULT("cuIpcOpenMemHandle_v2");
	REQUIRE_CTX();
	if (!p || flags > 1) return INVALID_VALUE;
	struct ipc_content c;
	memcpy(&c, &h, sizeof c);
	if (memcmp(c.magic, "gcudaIPm", 8) != 0) return INVALID_VALUE;
	if (c.pid == getpid() && !same_process) return INVALID_CONTEXT; // as the driver: not in the exporting process
	if (c.pid != getpid()) return INVALID_VALUE;                      // another process's memory: the fake cannot map it
	pthread_mutex_lock(&mu);
	struct record *r = find_base((uintptr_t)c.ptr, KIND_DEVICE);
	int slot = -1;
	for (int i = 0; i < MAX_MAPPINGS && slot < 0; i++)
		if (!mappings[i]) slot = i;
	CUresult rc = !r ? INVALID_VALUE : slot < 0 ? OUT_OF_MEMORY : SUCCESS;
	if (rc == SUCCESS) {
		mappings[slot] = (uintptr_t)c.ptr;
		live_ipc++;
		*p = (CUdeviceptr)c.ptr;
	}
	pthread_mutex_unlock(&mu);
	return rc;
}

EXPORT CUresult cuIpcCloseMemHandle(CUdeviceptr p) {
	FAULT("cuIpcCloseMemHandle");
	REQUIRE_CTX();
	pthread_mutex_lock(&mu);
	CUresult rc = INVALID_VALUE;
	for (int i = 0; i < MAX_MAPPINGS; i++)
		if (mappings[i] && mappings[i] == (uintptr_t)p) {
			mappings[i] = 0;
			live_ipc--;
			rc = SUCCESS;
			break;
		}
	pthread_mutex_unlock(&mu);
	return rc;
}

#define EVENT_INTERPROCESS 0x4
#define EVENT_DISABLE_TIMING 0x2

EXPORT CUresult cuIpcGetEventHandle(ipc_handle *h, CUevent e) {
	FAULT("cuIpcGetEventHandle");
	REQUIRE_CTX();
	if (!h) return INVALID_VALUE;
	pthread_mutex_lock(&mu);
	int ok = event_live(e) && (e->flags & EVENT_INTERPROCESS) && (e->flags & EVENT_DISABLE_TIMING);
	pthread_mutex_unlock(&mu);
	if (!ok) return INVALID_VALUE;
	struct ipc_content c = {.pid = getpid(), .ptr = (uint64_t)(uintptr_t)e};
	memcpy(c.magic, "gcudaIPe", 8);
	memset(h, 0, sizeof *h);
	memcpy(h, &c, sizeof c);
	return SUCCESS;
}

EXPORT CUresult cuIpcOpenEventHandle(CUevent *pe, ipc_handle h) {
	FAULT("cuIpcOpenEventHandle");
	REQUIRE_CTX();
	if (!pe) return INVALID_VALUE;
	struct ipc_content c;
	memcpy(&c, &h, sizeof c);
	if (memcmp(c.magic, "gcudaIPe", 8) != 0) return INVALID_VALUE;
	// The fake's events are the process's own: another process's cannot
	// be opened, and the driver refuses the exporting process's own.
	return c.pid == getpid() ? INVALID_CONTEXT : INVALID_VALUE;
}

EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *size, CUdeviceptr p) {
	FAULT("cuMemGetAddressRange_v2");
	REQUIRE_CTX();
	pthread_mutex_lock(&mu);
	CUresult rc = NOT_FOUND;
	for (struct record *r = records_head(); r; r = r->next)
		if (r->kind == KIND_DEVICE && p >= r->base && p - r->base < r->size) {
			if (base) *base = r->base;
			if (size) *size = r->size;
			rc = SUCCESS;
			break;
		}
	pthread_mutex_unlock(&mu);
	return rc;
}
