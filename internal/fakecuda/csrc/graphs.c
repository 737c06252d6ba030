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

struct fake_node;

struct fake_graph {
	struct op *ops;
	int n, cap;
	int opless;                // nodes that queue no work (empty, free)
	struct fake_node *nodes;   // the nodes added one by one (cuGraphAddNode)
	struct fake_cond *conds;   // the conditional handles made on it
	struct fake_graph *owner;  // a conditional node's body: the graph it is part of
	struct fake_graph *bodies; // its conditional nodes' bodies, linked by next_body
	struct fake_graph *next_body;
	uintptr_t *allocs; // stream-ordered memory allocated while capturing
	int nallocs;
	int invalid; // an operation the fake cannot capture was queued
	int mode;
	CUstream last_stream; // the stream an instance of it was last launched on
	long id;              // a capture's number, which events recorded in it keep
	int nstreams;         // its streams: its own and those joined to it
	CUstream origin;      // the stream that began the capture
	pthread_t thread;     // the thread that began the capture
	struct fake_graph *next;
	struct fake_graph *next_capture; // on the list of captures under way
};

// A node added by cuGraphAddNode: its graph, and its work's index in the
// graph's ops (-1 for none).
struct fake_node {
	struct fake_graph *g;
	int index;
	struct fake_graph *body; // a conditional node's body, handed out through phGraph_out
	struct fake_node **deps; // the nodes it runs after, as added
	int ndeps;
	uintptr_t alloc, freed; // an alloc node's memory, a free node's
	struct fake_node *next;
};

struct fake_exec {
	struct op *ops;
	int n;
	struct fake_graph *src; // the graph it was made from, whose nodes cuGraphExecNodeSetParams names
	struct fake_graph *made_from; // the graph instantiated, whatever the updates since
	struct fake_cond **resets; // the handles whose default each launch assigns
	int nresets;
	int allocs; // made from a graph with memory nodes, which no update changes
	// The memory of the graph it was made from, once that graph is
	// destroyed: the instance's until it is destroyed too.
	uintptr_t *owned;
	int nowned;
	CUstream last_stream; // the stream it was last launched on
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

static void free_ops(struct op *ops, int n);

// The live conditional handles: each also on its graph's conds list
// (linked by next), here by address.
#define MAX_CONDS 4096
static struct fake_cond *live_conds[MAX_CONDS];

static int cond_live(struct fake_cond *c) {
	for (int i = 0; c && i < MAX_CONDS; i++)
		if (live_conds[i] == c) return 1;
	return 0;
}

static void forget_cond(struct fake_cond *c) {
	for (int i = 0; i < MAX_CONDS; i++)
		if (live_conds[i] == c) live_conds[i] = NULL;
	free(c);
}

int set_condition(uint64_t handle, unsigned value) {
	pthread_mutex_lock(&mu);
	struct fake_cond *c = (struct fake_cond *)(uintptr_t)handle;
	int ok = cond_live(c);
	if (ok) c->value = value;
	pthread_mutex_unlock(&mu);
	return ok;
}

// free_op frees what an op owns (an op is run, or thrown away, once). A
// conditional op of a graph refers to its body graph, which the graph
// owns; a copy of it (an instance's, a launch's) owns a copy of the body.
static void free_op(struct op *o) {
	if (o->kind == OP_KERNEL) free(o->launch);
	if (o->kind == OP_BLAS) free(o->blas);
	if (o->kind == OP_LIB) free(o->job);
	if (o->kind == OP_COND && o->target) {
		free_ops(o->body->ops, o->body->n);
		free(o->body);
	}
}

static void free_ops(struct op *ops, int n) {
	for (int i = 0; i < n; i++) free_op(&ops[i]);
	free(ops);
}

static struct op *copy_ops(const struct op *ops, int n);

// copy_body copies a conditional's body's work, for an op that owns it.
static struct fake_graph *copy_body(const struct fake_graph *b) {
	struct fake_graph *c = calloc(1, sizeof *c);
	c->ops = copy_ops(b->ops, b->n);
	c->n = b->n;
	return c;
}

// copy_ops copies n ops, each kernel launch with its own parameters, each
// conditional with its own copy of its body (target 1: it owns it).
static struct op *copy_ops(const struct op *ops, int n) {
	struct op *c = calloc(n ? n : 1, sizeof *c);
	for (int i = 0; i < n; i++) {
		c[i] = ops[i];
		if (c[i].kind == OP_COND) {
			c[i].body = copy_body(ops[i].body);
			c[i].target = 1;
		}
		if (c[i].kind == OP_KERNEL) c[i].launch = launch_clone(ops[i].launch);
		if (c[i].kind == OP_BLAS) c[i].blas = blas_clone(ops[i].blas);
		if (c[i].kind == OP_LIB) {
			c[i].job = malloc(ops[i].job->size);
			memcpy(c[i].job, ops[i].job, ops[i].job->size);
		}
	}
	return c;
}

static int cond_live(struct fake_cond *c);

// unlink_bodies takes g's conditional bodies, and theirs, off the list of
// live graphs (mu held).
static void unlink_bodies(CUgraph g) {
	for (CUgraph b = g->bodies; b; b = b->next_body) {
		unlink_bodies(b);
		for (CUgraph *pp = &graphs; *pp; pp = &(*pp)->next)
			if (*pp == b) {
				*pp = b->next;
				break;
			}
	}
}

// free_graph frees a graph taken off the list: its work, its memory, its
// nodes, handles and bodies.
// free_graph_memory frees a graph's memory once the work queued on s (the
// stream its instance was last launched on), which may use it, is done: a
// graph and its instances are destroyed at once, their launches run to
// the end (mu not held).
static void free_graph_memory(uintptr_t *allocs, int n, CUstream s) {
	pthread_mutex_lock(&mu);
	int live = s && stream_live(s), capturing = live && s->capture;
	pthread_mutex_unlock(&mu);
	if (capturing) drain_stream(s); // a free queued now would be the capture's
	for (int i = 0; i < n; i++)
		if (!live || capturing || enqueue(s, (struct op){.kind = OP_FREE, .dst = (void *)allocs[i]}) != SUCCESS)
			free_device((void *)allocs[i]);
	free(allocs);
}

static void free_graph(CUgraph g) {
	free_graph_memory(g->allocs, g->nallocs, g->last_stream);
	free_ops(g->ops, g->n);
	while (g->nodes) {
		struct fake_node *n = g->nodes;
		g->nodes = n->next;
		free(n->deps);
		free(n);
	}
	pthread_mutex_lock(&mu);
	for (struct fake_cond *c = g->conds; c;) {
		struct fake_cond *next = c->next;
		forget_cond(c);
		c = next;
	}
	pthread_mutex_unlock(&mu);
	for (CUgraph b = g->bodies; b;) {
		CUgraph next = b->next_body;
		free_graph(b);
		b = next;
	}
	free(g);
}

static int capture_live(long id); // a capture of that number is under way (mu held)

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
		s->cap_nodes++;
		break;
	case OP_FREE: // a free node: of memory the capture allocated, the graph's
		rc = INVALID_VALUE; // another's, as the driver refuses it
		for (int i = 0; i < g->nallocs; i++)
			if (g->allocs[i] == (uintptr_t)o.dst) rc = SUCCESS;
		if (rc == SUCCESS) s->cap_nodes++;
		break;
	case OP_RECORD:
		// A record in a capture is no node: it marks the stream's nodes so
		// far, which a wait of another stream then depends on (joining
		// that stream to the capture, or this one back). The fake's
		// graph runs its work in the order it was queued, which keeps
		// every such dependency.
		o.event->capture_id = g->id;
		memcpy(o.event->capture_vc, s->cap_vc, sizeof s->cap_vc);
		o.event->capture_vc[s->cap_index] = s->cap_nodes;
		break;
	case OP_WAIT:
		if (o.event->capture_id == g->id) { // a dependency within the capture
			for (int i = 0; i < g->nstreams; i++)
				if (s->cap_vc[i] < o.event->capture_vc[i]) s->cap_vc[i] = o.event->capture_vc[i];
			break;
		}
		// On another capture's work (which would merge the two), or on
		// work outside any.
		g->invalid = 1;
		rc = capture_live(o.event->capture_id) ? STREAM_CAPTURE_MERGE : STREAM_CAPTURE_ISOLATION;
		break;
	default: // collectives, host functions: not captured by the fake
		g->invalid = 1;
		rc = STREAM_CAPTURE_UNSUPPORTED;
	}
	pthread_mutex_unlock(&mu);
	return rc;
}

// The captures under way (mu held to use it), which forbid a potentially
// unsafe call as the driver does (cuMemAlloc and cuMemFree, page-locked
// host memory, cuStreamSynchronize, cuMemFreeAsync outside the capture,
// cuGraphExecDestroy: what internal/fakecuda/probes/capture_unsafe.c saw
// the driver refuse, but cuMemFree, CUDA's first example of an unsafe
// call, not yet probed), by cuStreamBeginCapture's mode: a global capture forbids it on every thread (gocuda's threads keep
// the global interaction mode), a thread-local one on the capturing
// thread; a relaxed one, nowhere. The forbidden call fails, and ends the
// captures that forbade it with an error.
static struct fake_graph *captures;

static void capture_unlink(struct fake_graph *g) {
	for (struct fake_graph **pp = &captures; *pp; pp = &(*pp)->next_capture)
		if (*pp == g) {
			*pp = g->next_capture;
			return;
		}
}

int capture_forbids(void) {
	pthread_mutex_lock(&mu);
	int forbid = 0;
	for (struct fake_graph *g = captures; g; g = g->next_capture)
		if (g->mode == 0 || (g->mode == 1 && pthread_equal(g->thread, pthread_self()))) {
			g->invalid = 1;
			forbid = 1;
		}
	pthread_mutex_unlock(&mu);
	return forbid;
}

static int capture_live(long id) {
	for (struct fake_graph *g = captures; g; g = g->next_capture)
		if (g->id == id) return 1;
	return 0;
}

int capture_event_live(CUevent e) { return e->capture_id && capture_live(e->capture_id); }

int capture_join(CUstream s, CUevent e) {
	if (s->capture || !e->capture_id) return 0;
	for (struct fake_graph *g = captures; g; g = g->next_capture)
		if (g->id == e->capture_id) {
			if (g->nstreams == CAPTURE_STREAMS) {
				g->invalid = 1;
				return -1;
			}
			s->capture = g;
			s->cap_index = g->nstreams++;
			s->cap_nodes = 0;
			memcpy(s->cap_vc, e->capture_vc, sizeof s->cap_vc);
			return 1;
		}
	return 0;
}

// capture_abandon takes the capture of a stream being destroyed off it
// (mu held), for capture_free: the whole capture where the stream began
// it, its streams joined to it leaving it; only the stream where it
// joined one (which invalidates that capture, as a fork that can never be
// joined back).
void *capture_abandon(CUstream s) {
	struct fake_graph *g = s->capture;
	s->capture = NULL;
	if (g && g->origin != s) {
		g->invalid = 1;
		return NULL;
	}
	if (g) {
		capture_detach(g, s);
		capture_unlink(g);
	}
	return g;
}

// capture_free throws an abandoned capture away, its memory with it.
void capture_free(void *p) {
	struct fake_graph *g = p;
	if (!g) return;
	for (int i = 0; i < g->nallocs; i++) free_device((void *)g->allocs[i]);
	free_ops(g->ops, g->n);
	free(g->allocs);
	free(g);
}

void capture_alloc(CUstream s, uintptr_t base) {
	struct fake_graph *g = s->capture;
	s->cap_nodes++;
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
		static long next_id;
		s->capture->mode = mode;
		s->capture->id = ++next_id;
		s->capture->origin = s;
		s->capture->nstreams = 1;
		s->cap_index = 0;
		s->cap_nodes = 0;
		memset(s->cap_vc, 0, sizeof s->cap_vc);
		s->capture->thread = pthread_self();
		s->capture->next_capture = captures;
		captures = s->capture;
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
	if (g->origin != s) { // a stream joined to the capture
		pthread_mutex_unlock(&mu);
		return STREAM_CAPTURE_UNMATCHED;
	}
	if (g->mode != 2 && !pthread_equal(g->thread, pthread_self())) { // only a relaxed capture ends elsewhere
		pthread_mutex_unlock(&mu);
		return STREAM_CAPTURE_WRONG_THREAD;
	}
	s->capture = NULL;
	capture_unlink(g);
	int unjoined = capture_detach(g, s);
	if (unjoined && !g->invalid) {
		g->invalid = 1;
		pthread_mutex_unlock(&mu);
		capture_free(g);
		*out = NULL;
		return STREAM_CAPTURE_UNJOINED;
	}
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
			size_t k = *n < (size_t)(g->n + g->opless) ? *n : (size_t)(g->n + g->opless);
			for (size_t i = 0; i < k; i++) ((uintptr_t *)nodes)[i] = i + 1;
		}
		*n = g->n + g->opless;
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
	if (g && graph_live(g) && g->owner) { // a body goes with its graph
		pthread_mutex_unlock(&mu);
		return INVALID_VALUE;
	}
	for (CUgraph *pp = &graphs; *pp; pp = &(*pp)->next) {
		if (*pp == g) {
			*pp = g->next;
			live_graphs--;
			unlink_bodies(g);
			for (CUgraphExec e = execs; e; e = e->next)
				if (e->made_from == g) {
					// The instance keeps the graph's memory: it
					// outlives the graph, as the driver's does.
					e->made_from = NULL;
					e->owned = g->allocs, e->nowned = g->nallocs;
					g->allocs = NULL, g->nallocs = 0;
				}
			pthread_mutex_unlock(&mu);
			free_graph(g);
			return SUCCESS;
		}
	}
	pthread_mutex_unlock(&mu);
	return INVALID_HANDLE;
}

// collect_resets appends the handles of g and its bodies that assign a
// default at each launch to e's (mu held).
static void collect_resets(struct fake_exec *e, CUgraph g) {
	for (struct fake_cond *c = g->conds; c; c = c->next)
		if (c->assign) {
			e->resets = realloc(e->resets, (e->nresets + 1) * sizeof *e->resets);
			e->resets[e->nresets++] = c;
		}
	for (CUgraph b = g->bodies; b; b = b->next_body) collect_resets(e, b);
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
	if (g->owner) { // a conditional's body runs as part of its graph
		pthread_mutex_unlock(&mu);
		return INVALID_VALUE;
	}
	// A graph with memory nodes may have one instance at a time.
	for (CUgraphExec p = execs; g->nallocs && p; p = p->next)
		if (p->made_from == g) {
			pthread_mutex_unlock(&mu);
			return INVALID_VALUE;
		}
	struct fake_exec *e = calloc(1, sizeof *e);
	e->ops = copy_ops(g->ops, g->n);
	e->n = g->n;
	e->src = e->made_from = g;
	e->allocs = g->nallocs > 0;
	collect_resets(e, g);
	e->next = execs;
	execs = e;
	live_execs++;
	pthread_mutex_unlock(&mu);
	*out = e;
	return SUCCESS;
}

// The fake's CUgraphExecUpdateResult values.
enum { UPDATE_SUCCESS = 0, UPDATE_TOPOLOGY_CHANGED = 2, UPDATE_NODE_TYPE_CHANGED = 3, UPDATE_FUNCTION_CHANGED = 4, UPDATE_NOT_SUPPORTED = 6 };

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
	// As the H100's driver did, no instance is updated to or from another
	// graph with memory alloc or free nodes: CUDA_ERROR_NOT_SUPPORTED,
	// whatever the shapes (an instance of such a graph updated from that
	// graph itself is).
	if ((e->allocs || g->nallocs) && e->src != g) {
		ri->result = UPDATE_NOT_SUPPORTED;
		pthread_mutex_unlock(&mu);
		return NOT_SUPPORTED;
	}
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
	e->src = g;
	e->nresets = 0;
	collect_resets(e, g);
	pthread_mutex_unlock(&mu);
	return SUCCESS;
}

EXPORT CUresult cuGraphLaunch(CUgraphExec e, CUstream s) {
	FAULT("cuGraphLaunch");
	REQUIRE_CTX();
	pthread_mutex_lock(&record_mu);
	pthread_mutex_lock(&mu);
	int ok = exec_live(e) && (!s || stream_live(s));
	int capturing = ok && s && s->capture;
	if (ok && s && !capturing) {
		e->last_stream = s;
		if (e->made_from) e->made_from->last_stream = s;
	}
	struct op *ops = ok ? copy_ops(e->ops, e->n) : NULL;
	int n = ok ? e->n : 0;
	// A launch waits for the records of the events it waits on made
	// before it, as cuStreamWaitEvent does, and counts its own records.
	for (int i = 0; i < n; i++) {
		if (ops[i].kind == OP_WAIT) ops[i].target = ops[i].event->recorded;
		if (ops[i].kind == OP_RECORD && !capturing) ops[i].event->recorded++;
	}
	int nresets = ok ? e->nresets : 0;
	struct fake_cond **resets = NULL;
	if (nresets) {
		resets = malloc(nresets * sizeof *resets);
		memcpy(resets, e->resets, nresets * sizeof *resets);
	}
	pthread_mutex_unlock(&mu);
	pthread_mutex_unlock(&record_mu);
	if (!ok) return INVALID_HANDLE;
	if (capturing) {
		free_ops(ops, n);
		free(resets);
		return STREAM_CAPTURE_UNSUPPORTED;
	}
	CUresult rc = SUCCESS;
	for (int i = 0; i < nresets && rc == SUCCESS; i++) rc = enqueue(s, (struct op){.kind = OP_CONDRESET, .cond = resets[i]});
	free(resets);
	for (int i = 0; i < n; i++) {
		if (rc == SUCCESS) rc = enqueue(s, ops[i]);
		else free_op(&ops[i]);
	}
	free(ops);
	return rc;
}

// run_conditional runs a conditional op on its stream's worker: a reset
// assigns the handle's default; an if runs a copy of its body once when
// the handle is not 0, a while again and again while it is not.
void run_conditional(struct op *o) {
	pthread_mutex_lock(&mu);
	int live = cond_live(o->cond);
	pthread_mutex_unlock(&mu);
	if (o->kind == OP_CONDRESET) {
		if (live) set_condition((uintptr_t)o->cond, o->cond->initial);
		return;
	}
	for (;;) {
		pthread_mutex_lock(&mu);
		unsigned v = cond_live(o->cond) ? o->cond->value : 0;
		pthread_mutex_unlock(&mu);
		if (!v) break;
		struct op *ops = copy_ops(o->body->ops, o->body->n);
		for (int i = 0; i < o->body->n; i++) run_op(&ops[i]);
		free(ops);
		if (!o->loop) break;
	}
	free_op(o);
}

EXPORT CUresult cuGraphExecDestroy(CUgraphExec e) {
	FAULT("cuGraphExecDestroy");
	REQUIRE_CTX();
	if (capture_forbids()) return STREAM_CAPTURE_UNSUPPORTED;
	pthread_mutex_lock(&mu);
	for (CUgraphExec *pp = &execs; *pp; pp = &(*pp)->next) {
		if (*pp == e) {
			*pp = e->next;
			live_execs--;
			pthread_mutex_unlock(&mu);
			free_graph_memory(e->owned, e->nowned, e->last_stream);
			free_ops(e->ops, e->n);
			free(e->resets);
			free(e);
			return SUCCESS;
		}
	}
	pthread_mutex_unlock(&mu);
	return INVALID_HANDLE;
}

// ---- graphs built node by node ---------------------------------------------

EXPORT CUresult cuGraphCreate(CUgraph *out, unsigned flags) {
	FAULT("cuGraphCreate");
	REQUIRE_CTX();
	if (!out || flags) return INVALID_VALUE;
	CUgraph g = calloc(1, sizeof *g);
	pthread_mutex_lock(&mu);
	g->next = graphs;
	graphs = g;
	live_graphs++;
	pthread_mutex_unlock(&mu);
	*out = g;
	return SUCCESS;
}

// The parameter structures of cuda.h that the fake reads.
struct kernel_node { CUfunction f; unsigned grid[3], block[3], shared; void **params, **extra; void *kern; CUcontext ctx; };
struct memcpy3d {
	size_t srcX, srcY, srcZ, srcLOD;
	int srcType;
	const void *srcHost;
	CUdeviceptr srcDevice;
	void *srcArray, *reserved0;
	size_t srcPitch, srcHeight;
	size_t dstX, dstY, dstZ, dstLOD;
	int dstType;
	void *dstHost;
	CUdeviceptr dstDevice;
	void *dstArray, *reserved1;
	size_t dstPitch, dstHeight;
	size_t width, height, depth;
};
struct memcpy_node { int flags, reserved; CUcontext ctx; struct memcpy3d copy; };
struct memset_node { CUdeviceptr dst; size_t pitch; unsigned value, elementSize; size_t width, height; CUcontext ctx; };
struct event_node { CUevent event; };
struct alloc_node { int allocType, handleTypes, locType, locID; unsigned char rest[72]; const void *access; size_t naccess, bytesize; CUdeviceptr dptr; };
struct free_node { CUdeviceptr dptr; };
struct cond_node { uint64_t handle; int type; unsigned size; CUgraph *out; CUcontext ctx; };
struct node_params {
	int type, reserved0[3];
	union {
		long long reserved1[29];
		struct kernel_node kernel;
		struct memcpy_node memcpy;
		struct memset_node memset;
		struct event_node event;
		struct alloc_node alloc;
		struct free_node free;
		struct cond_node cond;
	};
	long long reserved2;
};

// node_op makes the work of a node of type p->type, or returns why not;
// *none is set for a node that queues no work.
static CUresult node_op(CUgraph g, struct node_params *p, struct op *o, int *none) {
	*none = 0;
	memset(o, 0, sizeof *o);
	switch (p->type) {
	case 0: {
		struct kernel_node *k = &p->kernel;
		if (!k->f || k->extra || k->kern) return INVALID_VALUE;
		const unsigned cluster[3] = {1, 1, 1};
		o->kind = OP_KERNEL;
		return make_launch(k->f, k->grid, k->block, k->shared, k->params, cluster, 0, &o->launch);
	}
	case 1: {
		struct memcpy3d *c = &p->memcpy.copy;
		if (p->memcpy.flags || c->srcType != 2 || c->dstType != 2 || c->height > 1 || c->depth > 1 || c->srcX || c->dstX) return INVALID_VALUE;
		if (!range_ok(c->srcDevice, c->width) || !range_ok(c->dstDevice, c->width)) return INVALID_VALUE;
		*o = (struct op){.kind = OP_COPY, .dst = (void *)(uintptr_t)c->dstDevice, .src = (void *)(uintptr_t)c->srcDevice, .n = c->width};
		return SUCCESS;
	}
	case 2: {
		struct memset_node *m = &p->memset;
		unsigned e = m->elementSize;
		if ((e != 1 && e != 2 && e != 4) || m->height > 1 || !range_ok(m->dst, m->width * e)) return INVALID_VALUE;
		*o = (struct op){.kind = e == 1 ? OP_SET8 : e == 2 ? OP_SET16 : OP_SET32, .dst = (void *)(uintptr_t)m->dst, .value = m->value, .n = m->width};
		return SUCCESS;
	}
	case 3: {
		struct host_node { void (*fn)(void *); void *data; } *h = (void *)&p->reserved1;
		if (!h->fn) return INVALID_VALUE;
		*o = (struct op){.kind = OP_HOST, .src = (const void *)h->fn, .n = (size_t)h->data};
		return SUCCESS;
	}
	case 5: *none = 1; return SUCCESS;
	case 6: case 7:
		if (!event_live(p->event.event)) return INVALID_HANDLE;
		*o = (struct op){.kind = p->type == 6 ? OP_WAIT : OP_RECORD, .event = p->event.event};
		return SUCCESS;
	case 10: {
		struct alloc_node *a = &p->alloc;
		if (a->allocType != 1 || a->locType != 1 || a->locID != current->device) return INVALID_VALUE;
		CUresult r = alloc_device(&a->dptr, a->bytesize);
		if (r != SUCCESS) return r;
		pthread_mutex_lock(&mu);
		g->allocs = realloc(g->allocs, (g->nallocs + 1) * sizeof *g->allocs);
		g->allocs[g->nallocs++] = (uintptr_t)a->dptr;
		pthread_mutex_unlock(&mu);
		*none = 1; // the graph's memory lives as long as the graph
		return SUCCESS;
	}
	case 11: {
		// Only memory an alloc node of this graph, or of the graph a
		// body is part of, allocated.
		for (CUgraph h = g; h; h = h->owner)
			for (int i = 0; i < h->nallocs; i++)
				if (h->allocs[i] == (uintptr_t)p->free.dptr) {
					*none = 1;
					return SUCCESS;
				}
		return INVALID_VALUE;
	}
	case 13: {
		struct cond_node *c = &p->cond;
		if ((c->type != 0 && c->type != 1) || c->size != 1) return INVALID_VALUE;
		pthread_mutex_lock(&mu);
		int live = cond_live((struct fake_cond *)(uintptr_t)c->handle);
		pthread_mutex_unlock(&mu);
		if (!live) return INVALID_VALUE;
		CUgraph b = calloc(1, sizeof *b);
		b->owner = g;
		pthread_mutex_lock(&mu);
		b->next = graphs;
		graphs = b;
		b->next_body = g->bodies;
		g->bodies = b;
		pthread_mutex_unlock(&mu);
		*o = (struct op){.kind = OP_COND, .cond = (struct fake_cond *)(uintptr_t)c->handle, .body = b, .loop = c->type == 1};
		return SUCCESS;
	}
	}
	return NOT_SUPPORTED;
}

EXPORT CUresult cuGraphAddNode(void **out, CUgraph g, void **deps, size_t ndeps, struct node_params *p) {
	FAULT("cuGraphAddNode");
	REQUIRE_CTX();
	if (!out || !p || (ndeps && !deps)) return INVALID_VALUE;
	pthread_mutex_lock(&mu);
	int ok = graph_live(g);
	for (size_t i = 0; ok && i < ndeps; i++) {
		struct fake_node *d = deps[i];
		int found = 0;
		for (struct fake_node *n = g->nodes; n; n = n->next) found |= n == d;
		if (!found) ok = -1;
	}
	pthread_mutex_unlock(&mu);
	if (ok <= 0) return ok ? INVALID_VALUE : INVALID_HANDLE;
	struct op o;
	int none;
	CUresult r = node_op(g, p, &o, &none);
	if (r != SUCCESS) return r;
	struct fake_node *n = calloc(1, sizeof *n);
	n->g = g;
	n->index = -1;
	if (ndeps) {
		n->deps = malloc(ndeps * sizeof *n->deps);
		memcpy(n->deps, deps, ndeps * sizeof *n->deps);
		n->ndeps = (int)ndeps;
	}
	if (p->type == 10) n->alloc = (uintptr_t)p->alloc.dptr;
	if (p->type == 11) n->freed = (uintptr_t)p->free.dptr;
	pthread_mutex_lock(&mu);
	if (none) g->opless++;
	else {
		if (g->n == g->cap) {
			g->cap = g->cap ? 2 * g->cap : 16;
			g->ops = realloc(g->ops, g->cap * sizeof *g->ops);
		}
		n->index = g->n;
		g->ops[g->n++] = o;
		if (o.kind == OP_COND) {
			n->body = o.body;
			p->cond.out = &n->body;
		}
	}
	n->next = g->nodes;
	g->nodes = n;
	pthread_mutex_unlock(&mu);
	*out = n;
	return SUCCESS;
}

EXPORT CUresult cuGraphExecNodeSetParams(CUgraphExec e, struct fake_node *n, struct node_params *p) {
	FAULT("cuGraphExecNodeSetParams");
	REQUIRE_CTX();
	if (!p || !n) return INVALID_VALUE;
	if (p->type != 0) return NOT_SUPPORTED; // the fake updates kernel nodes only
	pthread_mutex_lock(&mu);
	int ok = exec_live(e) && graph_live(e->src);
	int found = 0;
	for (struct fake_node *m = ok ? e->src->nodes : NULL; m; m = m->next) found |= m == n;
	pthread_mutex_unlock(&mu);
	if (!ok) return INVALID_HANDLE;
	if (!found || n->index < 0 || n->index >= e->n || e->ops[n->index].kind != OP_KERNEL) return INVALID_VALUE;
	struct op o;
	int none;
	CUresult r = node_op(e->src, p, &o, &none);
	if (r != SUCCESS) return r;
	pthread_mutex_lock(&mu);
	struct launch *old = e->ops[n->index].launch;
	if (!launch_same_kernel(old, o.launch)) r = INVALID_VALUE;
	else r = launch_keep_attributes(o.launch, old);
	if (r == SUCCESS) e->ops[n->index].launch = o.launch;
	pthread_mutex_unlock(&mu);
	free(r == SUCCESS ? old : o.launch);
	return r;
}

// node_of returns n if it is a node of a live graph (mu held).
static struct fake_node *node_of(struct fake_node *n) {
	if (!n || !graph_live(n->g)) return NULL;
	for (struct fake_node *m = n->g->nodes; m; m = m->next)
		if (m == n) return n;
	return NULL;
}

EXPORT CUresult cuGraphKernelNodeSetAttribute(struct fake_node *n, int attr, const void *value) {
	FAULT("cuGraphKernelNodeSetAttribute");
	REQUIRE_CTX();
	if (!value) return INVALID_VALUE;
	pthread_mutex_lock(&mu);
	CUresult r = INVALID_VALUE;
	if (node_of(n) && n->index >= 0 && n->g->ops[n->index].kind == OP_KERNEL)
		r = launch_set_attribute(n->g->ops[n->index].launch, attr, value);
	pthread_mutex_unlock(&mu);
	return r;
}

// cuGraphDestroyNode removes a node and its work; the fake's nodes have no
// edges to remove (a graph's work runs in the order it was added). A
// conditional node, whose body the fake would have to take apart too, is
// refused.
EXPORT CUresult cuGraphDestroyNode(struct fake_node *n) {
	FAULT("cuGraphDestroyNode");
	REQUIRE_CTX();
	pthread_mutex_lock(&mu);
	CUresult r = node_of(n) ? SUCCESS : INVALID_VALUE;
	if (r == SUCCESS && n->index >= 0 && n->g->ops[n->index].kind == OP_COND) r = NOT_SUPPORTED;
	if (r == SUCCESS) {
		CUgraph g = n->g;
		for (struct fake_node **p = &g->nodes; *p; p = &(*p)->next)
			if (*p == n) {
				*p = n->next;
				break;
			}
		// Its edges go with it.
		for (struct fake_node *m = g->nodes; m; m = m->next)
			for (int i = 0; i < m->ndeps; i++)
				if (m->deps[i] == n) m->deps[i--] = m->deps[--m->ndeps];
		if (n->index < 0) g->opless--;
		else {
			free_op(&g->ops[n->index]);
			memmove(&g->ops[n->index], &g->ops[n->index + 1], (g->n - n->index - 1) * sizeof *g->ops);
			g->n--;
			for (struct fake_node *m = g->nodes; m; m = m->next)
				if (m->index > n->index) m->index--;
		}
		free(n->deps);
		free(n);
	}
	pthread_mutex_unlock(&mu);
	return r;
}

EXPORT CUresult cuGraphConditionalHandleCreate(uint64_t *out, CUgraph g, CUcontext ctx, unsigned initial, unsigned flags) {
	FAULT("cuGraphConditionalHandleCreate");
	REQUIRE_CTX();
	if (!out || flags > 1 || ctx != current) return INVALID_VALUE;
	pthread_mutex_lock(&mu);
	CUresult r = graph_live(g) ? SUCCESS : INVALID_HANDLE;
	int slot = -1;
	for (int i = 0; r == SUCCESS && i < MAX_CONDS && slot < 0; i++)
		if (!live_conds[i]) slot = i;
	if (r == SUCCESS && slot < 0) r = OUT_OF_MEMORY;
	if (r == SUCCESS) {
		struct fake_cond *c = calloc(1, sizeof *c);
		c->initial = c->value = initial;
		c->assign = flags & 1;
		c->next = g->conds;
		g->conds = c;
		live_conds[slot] = c;
		*out = (uintptr_t)c;
	}
	pthread_mutex_unlock(&mu);
	return r;
}

// ---- linking -----------------------------------------------------------------
//
// The fake links by joining the PTX texts given (its modules are PTX), and
// checks that each library file named can be read.

struct fake_link {
	char *text;
	size_t n;
};

EXPORT CUresult cuLinkCreate_v2(unsigned n, int *options, void **values, struct fake_link **out) {
	FAULT("cuLinkCreate_v2");
	REQUIRE_CTX();
	(void)options, (void)values;
	if (!out || n > 64) return INVALID_VALUE;
	*out = calloc(1, sizeof **out);
	return SUCCESS;
}

EXPORT CUresult cuLinkAddData_v2(struct fake_link *l, int type, void *data, size_t size, const char *name, unsigned n, int *options, void **values) {
	FAULT("cuLinkAddData_v2");
	REQUIRE_CTX();
	(void)name, (void)n, (void)options, (void)values;
	if (!l || !data || !size) return INVALID_VALUE;
	if (type != 1) return INVALID_IMAGE; // PTX only
	size_t len = strnlen(data, size);
	l->text = realloc(l->text, l->n + len + 2);
	memcpy(l->text + l->n, data, len);
	l->n += len;
	l->text[l->n++] = '\n';
	l->text[l->n] = 0;
	return SUCCESS;
}

EXPORT CUresult cuLinkAddFile_v2(struct fake_link *l, int type, const char *path, unsigned n, int *options, void **values) {
	FAULT("cuLinkAddFile_v2");
	REQUIRE_CTX();
	(void)n, (void)options, (void)values;
	if (!l || !path || type != 4) return INVALID_VALUE;
	FILE *f = fopen(path, "rb");
	if (!f) return FILE_NOT_FOUND;
	fclose(f);
	return SUCCESS;
}

EXPORT CUresult cuLinkComplete(struct fake_link *l, void **out, size_t *size) {
	FAULT("cuLinkComplete");
	REQUIRE_CTX();
	if (!l || !out || !size || !l->text) return INVALID_VALUE;
	*out = l->text;
	*size = l->n + 1;
	return SUCCESS;
}

EXPORT CUresult cuLinkDestroy(struct fake_link *l) {
	FAULT("cuLinkDestroy");
	REQUIRE_CTX();
	if (!l) return INVALID_VALUE;
	free(l->text);
	free(l);
	return SUCCESS;
}
