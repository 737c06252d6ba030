// The fake's memory pools: each device's default pool, which
// cuMemAllocAsync takes from, and pools made by cuMemPoolCreate. Freed
// blocks stay in the pool for the next allocation of a size they fit; the
// pool gives unused blocks back past its release threshold at the next
// synchronization, or when trimmed, as the real driver does.
#include "fakecuda.h"

#include <stdlib.h>
#include <string.h>

struct block {
	void *p;
	size_t size;
	struct block *next;
};

struct fake_pool {
	int device;
	int is_default;
	int destroyed; // by cuMemPoolDestroy: gone once its blocks are back
	int reuse[4];  // the reuse attributes, 1-3: kept, not acted on
	size_t threshold, reserved, reserved_high, used, used_high;
	struct block *free_blocks;
	struct fake_pool *next;
};

static struct fake_pool *pools;
static struct fake_pool *defaults[MAX_DEVICES];
long live_pools; // pools made by cuMemPoolCreate and not destroyed

// granule is the size the fake rounds pool blocks to.
static size_t granule(size_t n) { return (n + 4095) & ~(size_t)4095; }

static int pool_live(struct fake_pool *p) {
	for (struct fake_pool *q = pools; q; q = q->next)
		if (q == p && !q->destroyed) return 1;
	return 0;
}

static struct fake_pool *default_pool(int device) {
	if (!defaults[device]) {
		struct fake_pool *p = calloc(1, sizeof *p);
		p->device = device;
		p->is_default = 1;
		p->next = pools;
		pools = p;
		defaults[device] = p;
	}
	return defaults[device];
}

// release frees unused blocks of p while it reserves more than keep.
static void release(struct fake_pool *p, size_t keep) {
	while (p->reserved > keep && p->free_blocks) {
		struct block *b = p->free_blocks;
		p->free_blocks = b->next;
		p->reserved -= b->size;
		primary[p->device].used -= b->size;
		free(b->p);
		free(b);
	}
}

CUresult pool_alloc(struct fake_pool *p, CUdeviceptr *out, size_t n) {
	size_t size = granule(n);
	// The smallest free block that fits, as long as it is not more than
	// twice what is asked.
	struct block **best = NULL;
	for (struct block **bp = &p->free_blocks; *bp; bp = &(*bp)->next)
		if ((*bp)->size >= size && (*bp)->size <= 2 * size && (!best || (*bp)->size < (*best)->size)) best = bp;
	void *mem;
	if (best) {
		struct block *b = *best;
		*best = b->next;
		mem = b->p;
		size = b->size;
		free(b);
	} else {
		struct fake_ctx *c = &primary[p->device];
		release(p, 0); // make room first, as the driver does before failing
		if (size > device_memory_of(p->device) - c->used) return OUT_OF_MEMORY;
		if (posix_memalign(&mem, 256, size) != 0) return OUT_OF_MEMORY;
		c->used += size;
		p->reserved += size;
		if (p->reserved > p->reserved_high) p->reserved_high = p->reserved;
	}
	p->used += size;
	if (p->used > p->used_high) p->used_high = p->used;
	add_record((uintptr_t)mem, n, KIND_DEVICE, &primary[p->device]);
	records_head()->ordered = 1;
	records_head()->pool = p;
	records_head()->capacity = size;
	*out = (CUdeviceptr)(uintptr_t)mem;
	return SUCCESS;
}

void pool_free(struct record *r) {
	struct fake_pool *p = r->pool;
	struct block *b = malloc(sizeof *b);
	b->p = (void *)r->base;
	b->size = r->capacity;
	b->next = p->free_blocks;
	p->free_blocks = b;
	p->used -= r->capacity;
	remove_record(r);
	if (p->destroyed) release(p, 0);
}

void pools_release_over_threshold(int device) {
	pthread_mutex_lock(&mu);
	for (struct fake_pool *p = pools; p; p = p->next)
		if (p->device == device) release(p, p->destroyed ? 0 : p->threshold);
	pthread_mutex_unlock(&mu);
}

// pools_reset forgets device's pools and their blocks: its context is gone
// (reset_context frees the blocks in use with the other records).
void pools_reset(int device) {
	for (struct fake_pool **pp = &pools; *pp;) {
		struct fake_pool *p = *pp;
		if (p->device != device) {
			pp = &p->next;
			continue;
		}
		while (p->free_blocks) {
			struct block *b = p->free_blocks;
			p->free_blocks = b->next;
			free(b->p);
			free(b);
		}
		*pp = p->next;
		if (!p->is_default && !p->destroyed) live_pools--;
		free(p);
	}
	defaults[device] = NULL;
}

EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *out, CUdevice d) {
	FAULT("cuDeviceGetDefaultMemPool");
	REQUIRE_INIT();
	if (!out || d < 0 || d >= ndevices) return d < 0 || d >= ndevices ? INVALID_DEVICE : INVALID_VALUE;
	pthread_mutex_lock(&mu);
	*out = default_pool(d);
	pthread_mutex_unlock(&mu);
	return SUCCESS;
}

// The leading fields of CUmemPoolProps the fake reads.
struct pool_props {
	int allocType;   // CU_MEM_ALLOCATION_TYPE_PINNED = 1
	int handleTypes; // CU_MEM_HANDLE_TYPE_NONE = 0
	int locType;     // CU_MEM_LOCATION_TYPE_DEVICE = 1
	int locId;
};

EXPORT CUresult cuMemPoolCreate(CUmemoryPool *out, const void *props) {
	FAULT("cuMemPoolCreate");
	REQUIRE_CTX();
	const struct pool_props *pp = props;
	if (!out || !pp || pp->allocType != 1 || pp->locType != 1 || pp->handleTypes != 0) return INVALID_VALUE;
	if (pp->locId < 0 || pp->locId >= ndevices) return INVALID_DEVICE;
	struct fake_pool *p = calloc(1, sizeof *p);
	p->device = pp->locId;
	pthread_mutex_lock(&mu);
	p->next = pools;
	pools = p;
	live_pools++;
	pthread_mutex_unlock(&mu);
	*out = p;
	return SUCCESS;
}

EXPORT CUresult cuMemPoolDestroy(CUmemoryPool p) {
	FAULT("cuMemPoolDestroy");
	REQUIRE_CTX();
	pthread_mutex_lock(&mu);
	CUresult rc = SUCCESS;
	if (!pool_live(p)) rc = INVALID_HANDLE;
	else if (p->is_default) rc = INVALID_VALUE;
	else {
		// Blocks still in use go back, and are freed, as they are freed.
		p->destroyed = 1;
		live_pools--;
		release(p, 0);
	}
	pthread_mutex_unlock(&mu);
	return rc;
}

EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *out, size_t n, CUmemoryPool p, CUstream s) {
	FAULT("cuMemAllocFromPoolAsync");
	REQUIRE_CTX();
	if (!out || n == 0) return INVALID_VALUE;
	pthread_mutex_lock(&mu);
	CUresult rc;
	if (!pool_live(p) || (s && !stream_live(s))) rc = INVALID_HANDLE;
	else rc = pool_alloc(p, out, n);
	if (rc == SUCCESS && s && s->capture) capture_alloc(s, (uintptr_t)*out);
	pthread_mutex_unlock(&mu);
	return rc;
}

// cuMemAllocAsync takes from the default pool of the current context's device.
CUresult alloc_async(CUdeviceptr *out, size_t n, CUstream s) {
	if (!out || n == 0) return INVALID_VALUE;
	pthread_mutex_lock(&mu);
	CUresult rc;
	if (s && !stream_live(s)) rc = INVALID_HANDLE;
	else rc = pool_alloc(default_pool(current->device), out, n);
	if (rc == SUCCESS && s && s->capture) capture_alloc(s, (uintptr_t)*out);
	pthread_mutex_unlock(&mu);
	return rc;
}

EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool p, size_t keep) {
	FAULT("cuMemPoolTrimTo");
	REQUIRE_CTX();
	pthread_mutex_lock(&mu);
	CUresult rc = pool_live(p) ? SUCCESS : INVALID_HANDLE;
	if (rc == SUCCESS) release(p, keep);
	pthread_mutex_unlock(&mu);
	return rc;
}

enum {
	ATTR_REUSE_FOLLOW = 1, ATTR_REUSE_OPPORTUNISTIC, ATTR_REUSE_INTERNAL, ATTR_RELEASE_THRESHOLD,
	ATTR_RESERVED_CURRENT, ATTR_RESERVED_HIGH, ATTR_USED_CURRENT, ATTR_USED_HIGH,
};

EXPORT CUresult cuMemPoolSetAttribute(CUmemoryPool p, int attr, void *value) {
	FAULT("cuMemPoolSetAttribute");
	REQUIRE_CTX();
	if (!value) return INVALID_VALUE;
	pthread_mutex_lock(&mu);
	CUresult rc = pool_live(p) ? SUCCESS : INVALID_HANDLE;
	if (rc == SUCCESS) {
		uint64_t v = *(uint64_t *)value;
		switch (attr) {
		case ATTR_REUSE_FOLLOW: case ATTR_REUSE_OPPORTUNISTIC: case ATTR_REUSE_INTERNAL:
			p->reuse[attr] = *(int *)value;
			break;
		case ATTR_RELEASE_THRESHOLD: p->threshold = v; break;
		// The high-water marks may only be reset, to zero: they restart at
		// the current figure.
		case ATTR_RESERVED_HIGH: if (v) rc = INVALID_VALUE; else p->reserved_high = p->reserved; break;
		case ATTR_USED_HIGH: if (v) rc = INVALID_VALUE; else p->used_high = p->used; break;
		default: rc = INVALID_VALUE;
		}
	}
	pthread_mutex_unlock(&mu);
	return rc;
}

EXPORT CUresult cuMemPoolGetAttribute(CUmemoryPool p, int attr, void *value) {
	FAULT("cuMemPoolGetAttribute");
	REQUIRE_CTX();
	if (!value) return INVALID_VALUE;
	pthread_mutex_lock(&mu);
	CUresult rc = pool_live(p) ? SUCCESS : INVALID_HANDLE;
	if (rc == SUCCESS) {
		uint64_t *v = value;
		switch (attr) {
		case ATTR_REUSE_FOLLOW: case ATTR_REUSE_OPPORTUNISTIC: case ATTR_REUSE_INTERNAL:
			*(int *)value = p->reuse[attr];
			break;
		case ATTR_RELEASE_THRESHOLD: *v = p->threshold; break;
		case ATTR_RESERVED_CURRENT: *v = p->reserved; break;
		case ATTR_RESERVED_HIGH: *v = p->reserved_high; break;
		case ATTR_USED_CURRENT: *v = p->used; break;
		case ATTR_USED_HIGH: *v = p->used_high; break;
		default: rc = INVALID_VALUE;
		}
	}
	pthread_mutex_unlock(&mu);
	return rc;
}

// CUmemAccessDesc: where (a device), and how (0 none, 1 read, 3 read-write).
struct access_desc {
	int locType;
	int locId;
	int flags;
};

EXPORT CUresult cuMemPoolSetAccess(CUmemoryPool p, const void *map, size_t count) {
	FAULT("cuMemPoolSetAccess");
	REQUIRE_CTX();
	const struct access_desc *d = map;
	if (!d || count == 0) return INVALID_VALUE;
	for (size_t i = 0; i < count; i++) {
		if (d[i].locType != 1 || (d[i].flags != 0 && d[i].flags != 1 && d[i].flags != 3)) return INVALID_VALUE;
		if (d[i].locId < 0 || d[i].locId >= ndevices) return INVALID_DEVICE;
	}
	pthread_mutex_lock(&mu);
	CUresult rc = pool_live(p) ? SUCCESS : INVALID_HANDLE;
	for (size_t i = 0; rc == SUCCESS && i < count; i++)
		if (d[i].locId != p->device && !peer_possible(p->device, d[i].locId)) rc = INVALID_DEVICE;
	pthread_mutex_unlock(&mu);
	return rc;
}
