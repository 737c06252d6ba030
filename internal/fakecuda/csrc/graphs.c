// The fake's CUDA graphs: a stream that captures records the work queued
// on it instead of running it; a graph is that list of work, an
// instantiated graph a copy of it, and launching one queues the copy's work
// on a stream, where the stream's worker runs it later like any other.
// Memory allocated stream-ordered during a capture belongs to the graph
// (the driver's memory nodes): freeing it in the capture records nothing,
// and the memory goes with the graph.
#include "fakecuda.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fake_graph {
	struct op *ops;
	int n, cap;
	uintptr_t *allocs; // stream-ordered memory allocated while capturing
	int nallocs;
	int invalid; // an operation the fake cannot capture was queued
	int mode;
	pthread_t thread;     // the thread that began a thread-local capture
	struct fake_graph *next;
};

struct fake_exec {
	struct op *ops;
	int n;
	struct fake_exec *next;
};

typedef struct fake_graph *CUgraph;
typedef struct fake_exec *CUgraphExec;

static struct fake_graph *graphs;
static struct fake_exec *execs;
long live_graphs, live_execs;

static int graph_live(CUgraph g) {
	for (CUgraph p = graphs; p; p = p->next)
		if (p == g) return 1;
	return 0;
}

static int exec_live(CUgraphExec e) {
	for (CUgraphExec p = execs; p; p = p->next)
		if (p == e) return 1;
	return 0;
}

// free_op frees what an op owns (an op is run, or thrown away, once).
static void free_op(struct op *o) {
	if (o->kind == OP_KERNEL) free(o->launch);
	if (o->kind == OP_BLAS) free(o->blas);
	if (o->kind == OP_LIB) free(o->job);
}

static void free_ops(struct op *ops, int n) {
	for (int i = 0; i < n; i++) free_op(&ops[i]);
	free(ops);
}

// copy_ops copies n ops, each kernel launch with its own parameters.
static struct op *copy_ops(const struct op *ops, int n) {
	struct op *c = calloc(n ? n : 1, sizeof *c);
	for (int i = 0; i < n; i++) {
		c[i] = ops[i];
		if (c[i].kind == OP_KERNEL) c[i].launch = launch_clone(ops[i].launch);
		if (c[i].kind == OP_BLAS) c[i].blas = blas_clone(ops[i].blas);
		if (c[i].kind == OP_LIB) {
			c[i].job = malloc(ops[i].job->size);
			memcpy(c[i].job, ops[i].job, ops[i].job->size);
		}
	}
	return c;
}

CUresult capture_op(CUstream s, struct op o) {
	pthread_mutex_lock(&mu);
	struct fake_graph *g = s->capture;
	CUresult rc = SUCCESS;
	switch (o.kind) {
	case OP_COPY: case OP_SET8: case OP_SET16: case OP_SET32: case OP_KERNEL: case OP_BLAS: case OP_LIB:
		if (g->n == g->cap) {
			g->cap = g->cap ? 2 * g->cap : 16;
			g->ops = realloc(g->ops, g->cap * sizeof *g->ops);
		}
		g->ops[g->n++] = o;
		break;
	case OP_FREE: // of memory the capture allocated: the graph's
		break;
	default: // events across streams, collectives: not captured by the fake
		g->invalid = 1;
		rc = STREAM_CAPTURE_UNSUPPORTED;
	}
	pthread_mutex_unlock(&mu);
	return rc;
}

void capture_alloc(CUstream s, uintptr_t base) {
	struct fake_graph *g = s->capture;
	g->allocs = realloc(g->allocs, (g->nallocs + 1) * sizeof *g->allocs);
	g->allocs[g->nallocs++] = base;
}

EXPORT CUresult cuStreamBeginCapture_v2(CUstream s, int mode) {
	FAULT("cuStreamBeginCapture_v2");
	REQUIRE_CTX();
	if (mode < 0 || mode > 2) return INVALID_VALUE;
	if (!s) return STREAM_CAPTURE_UNSUPPORTED; // the legacy stream cannot capture
	pthread_mutex_lock(&mu);
	CUresult rc = SUCCESS;
	if (!stream_live(s)) rc = INVALID_HANDLE;
	else if (s->capture) rc = ILLEGAL_STATE;
	else {
		s->capture = calloc(1, sizeof *s->capture);
		s->capture->mode = mode;
		s->capture->thread = pthread_self();
	}
	pthread_mutex_unlock(&mu);
	return rc;
}

EXPORT CUresult cuStreamEndCapture(CUstream s, CUgraph *out) {
	FAULT("cuStreamEndCapture");
	REQUIRE_CTX();
	if (!out) return INVALID_VALUE;
	pthread_mutex_lock(&mu);
	if (!s || !stream_live(s) || !s->capture) {
		pthread_mutex_unlock(&mu);
		return s && stream_live(s) ? STREAM_CAPTURE_UNMATCHED : INVALID_HANDLE;
	}
	struct fake_graph *g = s->capture;
	if (g->mode == 1 && !pthread_equal(g->thread, pthread_self())) {
		pthread_mutex_unlock(&mu);
		return STREAM_CAPTURE_WRONG_THREAD;
	}
	s->capture = NULL;
	if (g->invalid) {
		// The capture ends, and with it the graph: its memory goes too.
		pthread_mutex_unlock(&mu);
		for (int i = 0; i < g->nallocs; i++) free_device((void *)g->allocs[i]);
		free_ops(g->ops, g->n);
		free(g->allocs);
		free(g);
		*out = NULL;
		return STREAM_CAPTURE_INVALIDATED;
	}
	g->next = graphs;
	graphs = g;
	live_graphs++;
	pthread_mutex_unlock(&mu);
	*out = g;
	return SUCCESS;
}

EXPORT CUresult cuStreamIsCapturing(CUstream s, int *status) {
	FAULT("cuStreamIsCapturing");
	REQUIRE_CTX();
	if (!status) return INVALID_VALUE;
	pthread_mutex_lock(&mu);
	CUresult rc = SUCCESS;
	if (s && !stream_live(s)) rc = INVALID_HANDLE;
	else *status = s && s->capture ? (s->capture->invalid ? 2 : 1) : 0;
	pthread_mutex_unlock(&mu);
	return rc;
}

EXPORT CUresult cuGraphGetNodes(CUgraph g, void *nodes, size_t *n) {
	FAULT("cuGraphGetNodes");
	REQUIRE_CTX();
	if (!n) return INVALID_VALUE;
	pthread_mutex_lock(&mu);
	CUresult rc = graph_live(g) ? SUCCESS : INVALID_HANDLE;
	if (rc == SUCCESS) {
		if (nodes) {
			// The fake's nodes are the indices of the graph's work, plus one.
			size_t k = *n < (size_t)g->n ? *n : (size_t)g->n;
			for (size_t i = 0; i < k; i++) ((uintptr_t *)nodes)[i] = i + 1;
		}
		*n = g->n;
	}
	pthread_mutex_unlock(&mu);
	return rc;
}

static const char *op_name(const struct op *o) {
	switch (o->kind) {
	case OP_COPY: return "memcpy";
	case OP_SET8: case OP_SET16: case OP_SET32: return "memset";
	case OP_KERNEL: case OP_BLAS: case OP_LIB: return "kernel";
	default: return "op";
	}
}

EXPORT CUresult cuGraphDebugDotPrint(CUgraph g, const char *path, unsigned flags) {
	FAULT("cuGraphDebugDotPrint");
	REQUIRE_CTX();
	(void)flags;
	if (!path) return INVALID_VALUE;
	pthread_mutex_lock(&mu);
	CUresult rc = graph_live(g) ? SUCCESS : INVALID_HANDLE;
	FILE *f = rc == SUCCESS ? fopen(path, "w") : NULL;
	if (rc == SUCCESS && !f) rc = OPERATING_SYSTEM;
	if (f) {
		fprintf(f, "digraph fakecuda_graph {\n");
		for (int i = 0; i < g->n; i++) {
			fprintf(f, "  node%d [label=\"%s %d\"];\n", i + 1, op_name(&g->ops[i]), i + 1);
			if (i) fprintf(f, "  node%d -> node%d;\n", i, i + 1);
		}
		fprintf(f, "}\n");
		fclose(f);
	}
	pthread_mutex_unlock(&mu);
	return rc;
}

EXPORT CUresult cuGraphDestroy(CUgraph g) {
	FAULT("cuGraphDestroy");
	REQUIRE_CTX();
	pthread_mutex_lock(&mu);
	for (CUgraph *pp = &graphs; *pp; pp = &(*pp)->next) {
		if (*pp == g) {
			*pp = g->next;
			live_graphs--;
			pthread_mutex_unlock(&mu);
			for (int i = 0; i < g->nallocs; i++) free_device((void *)g->allocs[i]);
			free_ops(g->ops, g->n);
			free(g->allocs);
			free(g);
			return SUCCESS;
		}
	}
	pthread_mutex_unlock(&mu);
	return INVALID_HANDLE;
}

EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec *out, CUgraph g, unsigned long long flags) {
	FAULT("cuGraphInstantiateWithFlags");
	REQUIRE_CTX();
	if (!out || flags) return INVALID_VALUE;
	pthread_mutex_lock(&mu);
	if (!graph_live(g)) {
		pthread_mutex_unlock(&mu);
		return INVALID_HANDLE;
	}
	struct fake_exec *e = calloc(1, sizeof *e);
	e->ops = copy_ops(g->ops, g->n);
	e->n = g->n;
	e->next = execs;
	execs = e;
	live_execs++;
	pthread_mutex_unlock(&mu);
	*out = e;
	return SUCCESS;
}

// The fake's CUgraphExecUpdateResult values.
enum { UPDATE_SUCCESS = 0, UPDATE_TOPOLOGY_CHANGED = 2, UPDATE_NODE_TYPE_CHANGED = 3, UPDATE_FUNCTION_CHANGED = 4 };

struct update_info {
	int result;
	uintptr_t errorNode, errorFromNode;
};

EXPORT CUresult cuGraphExecUpdate_v2(CUgraphExec e, CUgraph g, void *info) {
	FAULT("cuGraphExecUpdate_v2");
	REQUIRE_CTX();
	struct update_info *ri = info;
	if (!ri) return INVALID_VALUE;
	pthread_mutex_lock(&mu);
	if (!exec_live(e) || !graph_live(g)) {
		pthread_mutex_unlock(&mu);
		return INVALID_HANDLE;
	}
	ri->result = UPDATE_SUCCESS;
	ri->errorNode = ri->errorFromNode = 0;
	if (e->n != g->n) ri->result = UPDATE_TOPOLOGY_CHANGED;
	for (int i = 0; ri->result == UPDATE_SUCCESS && i < g->n; i++) {
		int a = e->ops[i].kind, b = g->ops[i].kind;
		int sa = a == OP_SET8 || a == OP_SET16 || a == OP_SET32, sb = b == OP_SET8 || b == OP_SET16 || b == OP_SET32;
		if (a != b && !(sa && sb)) ri->result = UPDATE_NODE_TYPE_CHANGED;
		else if (a == OP_KERNEL && !launch_same_kernel(e->ops[i].launch, g->ops[i].launch)) ri->result = UPDATE_FUNCTION_CHANGED;
		if (ri->result != UPDATE_SUCCESS) ri->errorNode = i + 1;
	}
	if (ri->result != UPDATE_SUCCESS) {
		pthread_mutex_unlock(&mu);
		return GRAPH_EXEC_UPDATE_FAILURE;
	}
	free_ops(e->ops, e->n);
	e->ops = copy_ops(g->ops, g->n);
	pthread_mutex_unlock(&mu);
	return SUCCESS;
}

EXPORT CUresult cuGraphLaunch(CUgraphExec e, CUstream s) {
	FAULT("cuGraphLaunch");
	REQUIRE_CTX();
	pthread_mutex_lock(&mu);
	int ok = exec_live(e) && (!s || stream_live(s));
	int capturing = ok && s && s->capture;
	struct op *ops = ok ? copy_ops(e->ops, e->n) : NULL;
	int n = ok ? e->n : 0;
	pthread_mutex_unlock(&mu);
	if (!ok) return INVALID_HANDLE;
	if (capturing) {
		free_ops(ops, n);
		return STREAM_CAPTURE_UNSUPPORTED;
	}
	CUresult rc = SUCCESS;
	for (int i = 0; i < n; i++) {
		if (rc == SUCCESS) rc = enqueue(s, ops[i]);
		else free_op(&ops[i]);
	}
	free(ops);
	return rc;
}

EXPORT CUresult cuGraphExecDestroy(CUgraphExec e) {
	FAULT("cuGraphExecDestroy");
	REQUIRE_CTX();
	pthread_mutex_lock(&mu);
	for (CUgraphExec *pp = &execs; *pp; pp = &(*pp)->next) {
		if (*pp == e) {
			*pp = e->next;
			live_execs--;
			pthread_mutex_unlock(&mu);
			free_ops(e->ops, e->n);
			free(e);
			return SUCCESS;
		}
	}
	pthread_mutex_unlock(&mu);
	return INVALID_HANDLE;
}
