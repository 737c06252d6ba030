// The fake cuDNN's fused attention (included by dnn.c, in its backend
// section): the operation graph of scaled dot-product attention's forward
// as cuDNN's frontend builds it for its sdpa node, checked op by op and
// tensor by tensor, and computed on the CPU by the stream's worker.
//
// The graph, by dataflow (the operations in any order in the graph's
// list, each used once):
//
//	S = matmul(Q, Kᵀ)                       Q [B,H,Sq,D], Kᵀ [B,Hkv,D,Sk] (D's stride 1 in both), S virtual float
//	S = mul(S, scale)                        scale a float passed by value
//	causal: row = gen_index(S, axis 2) [add Sk, sub Sq: int32 passed by value],
//	        col = gen_index(S, axis 3) (both int32, computed in int32 or float),
//	        mask = cmp_ge(row, col) (boolean),
//	        S = binary_select(S, lowest, mask) (lowest a float passed by value:
//	        −FLT_MAX or −inf)
//	M = reduce max(S) [B,H,Sq,1];  E = exp(sub(S, M));  Z = reduce add(E)
//	Stats = add(M, log(Z))                   float: real, packed [B,H,Sq,1], where asked for, else virtual
//	P = div(E, Z)                            virtual, of Q's type
//	O = matmul(P, V)                         V [B,Hkv,Sk,D], O [B,H,Sq,D] real, of Q's type
//
// Every intermediate is virtual; a malformed graph is refused at the
// graph's finalize (CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN, or
// BAD_PARAM for types and shapes that do not agree). The heuristics rank
// two engines for it: 4, which refuses every graph at the plan's finalize,
// then 3, the fused one, which needs a work area and refuses D not a
// multiple of 8 or above 256 and operands aligned to less than 16 bytes;
// FALLBACK has none.

enum { BD_MATMUL = 18, BD_OP_MATMUL = 19, BD_REDUCTION = 21, BD_OP_REDUCTION = 22 };
enum { D_INT32 = 4, D_BOOLEAN = 11 };
enum {
	PW_ADD = 0, PW_MUL = 1, PW_DIV = 6, PW_SUB = 9, PW_EXP = 13, PW_LOG = 15, PW_CMP_GE = 303, PW_GEN_INDEX = 501,
	PW_SELECT = 601
};
enum { RED_ADD = 0, RED_MAX = 3 };
enum { SDPA_ENGINE = 3, SDPA_ENGINE_REFUSING = 4 };

// A tensor of the graph, copied from its descriptor when an operation is
// finalized.
struct sdpa_tensor {
	int64_t dim[4], str[4], uid, align;
	int dt, virt, byval;
};

// An operation's part: its kind (the descriptor type), mode (pointwise or
// reduction), math precision, axis, inputs (pointwise: x, b, t; matmul: a,
// b; reduction: x) and output.
struct sdpa_op {
	int kind, mode, prec, nin;
	int64_t axis;
	struct sdpa_tensor in[3], out;
};

// A graph's part, copied to its heuristics, engine configurations,
// engines and plans.
struct sdpa_graph {
	int causal, br, stats, lse, dt; // lse: the statistics' add is in the graph (stats: real)
	int64_t B, H, Hkv, Sq, Sk, D;
	struct sdpa_tensor q, k, v, o, st; // k as Kᵀ
	int64_t scale_uid, lowest_uid, sk_uid, sq_uid;
};

static int sdpa_pw_mode(int m) {
	switch (m) {
	case PW_ADD: case PW_MUL: case PW_DIV: case PW_SUB: case PW_EXP: case PW_LOG: case PW_CMP_GE: case PW_GEN_INDEX: case PW_SELECT: return 1;
	}
	return 0;
}

static size_t sdpa_dsize(int dt) { return dt == D_INT32 ? 4 : dt == D_BOOLEAN ? 1 : dsize(dt); }

// sdpa_read reads tensor descriptor t (finalized) into *o.
static void sdpa_read(struct fake_bd *t, struct sdpa_tensor *o) {
	const int64_t *dims = bd_get(t, 902, NULL), *str = bd_get(t, 903, NULL);
	const unsigned char *virt = bd_get(t, 907, NULL), *byval = bd_get(t, 908, NULL);
	*o = (struct sdpa_tensor){.uid = bd_i64(t, 906, 0), .align = bd_i64(t, 900, 0), .dt = bd_i32(t, 901, -1), .virt = virt && *virt,
	                          .byval = byval && *byval};
	for (int i = 0; i < 4; i++) o->dim[i] = dims[i], o->str[i] = str[i];
}

// sdpa_finalize_tensor finalizes a 4-D tensor of any strides and of the
// types the attention graph uses, where finalize_tensor (the
// convolutions', NCHW or NHWC) refused it with r: its layout marked -1, so
// that the convolutions refuse it still (bd_tensor_of).
static int sdpa_finalize_tensor(struct fake_bd *d, int r) {
	int64_t nd = 0, ns = 0;
	const int64_t *dims = bd_get(d, 902, &nd), *strides = bd_get(d, 903, &ns);
	if (!bd_get(d, 901, NULL) || !dims || !strides || !bd_get(d, 906, NULL) || !bd_get(d, 900, NULL)) return r;
	if (nd != ns || nd != 4) return r;
	int dt = bd_i32(d, 901, -1);
	if (!sdpa_dsize(dt)) return r;
	for (int i = 0; i < 4; i++)
		if (dims[i] < 1 || dims[i] > INT32_MAX || strides[i] < 1) return DNN_BAD_PARAM;
	int64_t align = bd_i64(d, 900, 0);
	if (align < 1 || (align & (align - 1))) return DNN_BAD_PARAM;
	const unsigned char *virt = bd_get(d, 907, NULL), *byval = bd_get(d, 908, NULL);
	if (byval && *byval && ((virt && *virt) || dims[0] * dims[1] * dims[2] * dims[3] != 1)) return DNN_BAD_PARAM;
	d->t = (struct bd_tensor){.d = {(int)dims[0], (int)dims[1], (int)dims[2], (int)dims[3], -1, dt}, .uid = bd_i64(d, 906, 0), .align = align,
	                          .virt = virt && *virt};
	return DNN_SUCCESS;
}

// sdpa_tensor_at reads the finalized tensor attribute name of d names.
static int sdpa_tensor_at(struct fake_bd *d, int name, struct sdpa_tensor *t) {
	int r = 0;
	struct fake_bd *x = bd_ref(d, name, BD_TENSOR, &r);
	if (!x) return r;
	sdpa_read(x, t);
	return DNN_SUCCESS;
}

static struct sdpa_op *sdpa_op_new(struct fake_bd *d, int kind) {
	free(d->sdpa);
	struct sdpa_op *o = calloc(1, sizeof *o);
	o->kind = kind;
	d->sdpa = o;
	return o;
}

static int same4(const int64_t *a, const int64_t *b) { return a[0] == b[0] && a[1] == b[1] && a[2] == b[2] && a[3] == b[3]; }

// sdpa_finalize_pw records a pointwise operation's part for the attention
// graph: its x and y of one shape (b and t: of it, or passed by value, or
// [B,H,Sq,1] broadcast over the last axis), the inputs each mode takes
// and no other.
static int sdpa_finalize_pw(struct fake_bd *d) {
	int r;
	struct fake_bd *pw = bd_ref(d, 750, BD_POINTWISE, &r);
	if (!pw) return r;
	int mode = bd_i32(pw, 0, -1);
	if (!sdpa_pw_mode(mode)) return DNN_NOT_SUPPORTED;
	int need = mode == PW_EXP || mode == PW_LOG || mode == PW_GEN_INDEX ? 1 : mode == PW_SELECT ? 3 : 2;
	struct sdpa_op o = {.kind = BD_OP_PW, .mode = mode, .prec = bd_i32(pw, 1, -1), .axis = bd_i64(pw, 9, -1), .nin = need};
	if ((r = sdpa_tensor_at(d, 751, &o.in[0])) || (r = sdpa_tensor_at(d, 753, &o.out))) return r;
	if ((need >= 2) != (bd_get(d, 752, NULL) != NULL) || (need == 3) != (bd_get(d, 758, NULL) != NULL)) return DNN_BAD_PARAM;
	if (need >= 2 && (r = sdpa_tensor_at(d, 752, &o.in[1]))) return r;
	if (need == 3 && (r = sdpa_tensor_at(d, 758, &o.in[2]))) return r;
	// GEN_INDEX's axis is its own; the frontend names axis 3 on other
	// modes too (the bottom-right offset's add and subtract), unread.
	if (mode == PW_GEN_INDEX ? o.axis < 0 || o.axis > 3 : o.axis != -1 && o.axis != 3) return DNN_BAD_PARAM;
	if (!same4(o.in[0].dim, o.out.dim)) return DNN_BAD_PARAM_SHAPE_MISMATCH;
	for (int i = 1; i < need; i++) {
		const int64_t *b = o.in[i].dim, *x = o.out.dim;
		for (int j = 0; j < 4; j++)
			if (b[j] != 1 && b[j] != x[j]) return DNN_BAD_PARAM_SHAPE_MISMATCH;
	}
	*sdpa_op_new(d, BD_OP_PW) = o;
	return DNN_SUCCESS;
}

// sdpa_finalize finalizes the descriptors only the attention graph uses:
// matmul and reduction descriptors and their operations.
static int sdpa_finalize(struct fake_bd *d) {
	int r;
	switch (d->type) {
	case BD_MATMUL:
		if (!bd_get(d, 1500, NULL)) return DNN_BAD_PARAM;
		if (bd_i32(d, 1500, -1) != D_FLOAT) return DNN_NOT_SUPPORTED_DATA_TYPE;
		return DNN_SUCCESS;
	case BD_REDUCTION: {
		if (!bd_get(d, 1600, NULL) || !bd_get(d, 1601, NULL)) return DNN_BAD_PARAM;
		int m = bd_i32(d, 1600, -1);
		if (m < 0 || m > 8) return DNN_BAD_PARAM;
		if (m != RED_ADD && m != RED_MAX) return DNN_NOT_SUPPORTED;
		if (bd_i32(d, 1601, -1) != D_FLOAT) return DNN_NOT_SUPPORTED_DATA_TYPE;
		return DNN_SUCCESS;
	}
	case BD_OP_MATMUL: {
		if (!bd_ref(d, 1523, BD_MATMUL, &r)) return r;
		struct sdpa_op o = {.kind = BD_OP_MATMUL, .nin = 2};
		if ((r = sdpa_tensor_at(d, 1520, &o.in[0])) || (r = sdpa_tensor_at(d, 1521, &o.in[1])) || (r = sdpa_tensor_at(d, 1522, &o.out))) return r;
		const int64_t *a = o.in[0].dim, *b = o.in[1].dim, *c = o.out.dim;
		// [.., M, K] x [.., K, N] = [.., M, N], b's batch axes broadcast.
		if (a[3] != b[2] || c[2] != a[2] || c[3] != b[3]) return DNN_BAD_PARAM_SHAPE_MISMATCH;
		for (int i = 0; i < 2; i++)
			if (a[i] != c[i] || (b[i] != c[i] && (b[i] < 1 || c[i] % b[i]))) return DNN_BAD_PARAM_SHAPE_MISMATCH;
		*sdpa_op_new(d, BD_OP_MATMUL) = o;
		return DNN_SUCCESS;
	}
	case BD_OP_REDUCTION: {
		struct fake_bd *rd = bd_ref(d, 1612, BD_REDUCTION, &r);
		if (!rd) return r;
		struct sdpa_op o = {.kind = BD_OP_REDUCTION, .mode = bd_i32(rd, 1600, -1), .nin = 1};
		if ((r = sdpa_tensor_at(d, 1610, &o.in[0])) || (r = sdpa_tensor_at(d, 1611, &o.out))) return r;
		for (int i = 0; i < 4; i++)
			if (o.out.dim[i] != 1 && o.out.dim[i] != o.in[0].dim[i]) return DNN_BAD_PARAM_SHAPE_MISMATCH;
		*sdpa_op_new(d, BD_OP_REDUCTION) = o;
		return DNN_SUCCESS;
	}
	}
	return DNN_BAD_PARAM;
}

// sdpa_is_graph reports whether the graph's ops are the attention
// graph's (a matmul or a reduction among them).
static int sdpa_is_graph(struct fake_bd *d) {
	int64_t nops = 0;
	struct fake_bd *const *ops = bd_get(d, 801, &nops);
	for (int i = 0; ops && i < nops; i++)
		if (bd_ok(ops[i]) && (ops[i]->type == BD_OP_MATMUL || ops[i]->type == BD_OP_REDUCTION)) return 1;
	return 0;
}

// The graph's operations while it is checked: each found once.
struct sdpa_ops {
	int n;
	struct sdpa_op *op[16];
	int used[16];
};

// sdpa_take returns the unused operation of kind and mode (mode -1: any)
// whose output has id uid, marked used; NULL where there is none.
static struct sdpa_op *sdpa_take(struct sdpa_ops *g, int kind, int mode, int64_t uid) {
	for (int i = 0; i < g->n; i++) {
		struct sdpa_op *o = g->op[i];
		if (!g->used[i] && o->kind == kind && (mode < 0 || o->mode == mode) && o->out.uid == uid) {
			g->used[i] = 1;
			return o;
		}
	}
	return NULL;
}

static int sdpa_is_s(const struct sdpa_tensor *t, const int64_t *s, int dt) { return t->virt && t->dt == dt && same4(t->dim, s); }

static int sdpa_scalar(const struct sdpa_tensor *t, int dt) { return t->byval && t->dt == dt; }

// sdpa_finalize_graph checks the attention graph (see the top of the file)
// from its output back, and records it.
static int sdpa_finalize_graph(struct fake_bd *d) {
	struct fake_dnn *const *hp = bd_get(d, 800, NULL);
	int64_t nops = 0;
	struct fake_bd *const *ops = bd_get(d, 801, &nops);
	if (!hp || !ops || !dnn_live(*hp)) return DNN_BAD_PARAM;
	struct sdpa_ops g = {.n = (int)nops};
	for (int i = 0; i < nops; i++) {
		struct fake_bd *op = ops[i];
		if (!bd_ok(op)) return DNN_BAD_PARAM;
		if (!op->final) return DNN_BAD_PARAM_NOT_FINALIZED;
		if (op->type != BD_OP_MATMUL && op->type != BD_OP_REDUCTION && op->type != BD_OP_PW) return DNN_NOT_SUPPORTED_GRAPH_PATTERN;
		if (!op->sdpa) return DNN_NOT_SUPPORTED_GRAPH_PATTERN; // a pointwise mode only the convolutions take
		g.op[i] = op->sdpa;
	}
	const int P = DNN_NOT_SUPPORTED_GRAPH_PATTERN;
	// The output: the second matmul, the only one whose output is real.
	struct sdpa_op *bmm2 = NULL;
	for (int i = 0; i < g.n; i++)
		if (g.op[i]->kind == BD_OP_MATMUL && !g.op[i]->out.virt) {
			if (bmm2) return P;
			bmm2 = g.op[i], g.used[i] = 1;
		}
	if (!bmm2) return P;
	struct sdpa_graph s = {.o = bmm2->out, .v = bmm2->in[1]};
	struct sdpa_tensor p = bmm2->in[0];
	int dt = s.o.dt;
	if (dt != D_HALF && dt != D_BF16) return DNN_NOT_SUPPORTED_DATA_TYPE;
	if (s.v.virt || s.v.byval || s.o.byval || s.v.dt != dt) return DNN_BAD_PARAM;
	if (!p.virt || p.dt != dt) return P; // the probabilities in the inputs' type
	s.dt = dt;
	s.B = s.o.dim[0], s.H = s.o.dim[1], s.Sq = s.o.dim[2], s.D = s.o.dim[3], s.Hkv = s.v.dim[1], s.Sk = s.v.dim[2];
	const int64_t sd[4] = {s.B, s.H, s.Sq, s.Sk}, rd[4] = {s.B, s.H, s.Sq, 1};
	// P = E / Z.
	struct sdpa_op *div = sdpa_take(&g, BD_OP_PW, PW_DIV, p.uid);
	if (!div || div->prec != D_FLOAT) return P;
	struct sdpa_tensor e = div->in[0], z = div->in[1];
	if (!sdpa_is_s(&e, sd, D_FLOAT) || !sdpa_is_s(&z, rd, D_FLOAT)) return P;
	struct sdpa_op *sum = sdpa_take(&g, BD_OP_REDUCTION, RED_ADD, z.uid);
	if (!sum || sum->in[0].uid != e.uid) return P;
	struct sdpa_op *ex = sdpa_take(&g, BD_OP_PW, PW_EXP, e.uid);
	if (!ex || ex->prec != D_FLOAT || !sdpa_is_s(&ex->in[0], sd, D_FLOAT)) return P;
	struct sdpa_op *sub = sdpa_take(&g, BD_OP_PW, PW_SUB, ex->in[0].uid);
	if (!sub || sub->prec != D_FLOAT) return P;
	struct sdpa_tensor sc = sub->in[0], m = sub->in[1];
	if (!sdpa_is_s(&sc, sd, D_FLOAT) || !sdpa_is_s(&m, rd, D_FLOAT)) return P;
	struct sdpa_op *mx = sdpa_take(&g, BD_OP_REDUCTION, RED_MAX, m.uid);
	if (!mx || mx->in[0].uid != sc.uid) return P;
	// The statistics: Stats = M + log(Z), the only real pointwise output
	// where they are asked for, virtual where not (the frontend builds
	// them either way; without them the fused engine refuses the graph).
	for (int i = 0; i < g.n; i++) {
		struct sdpa_op *o = g.op[i];
		if (g.used[i] || o->kind != BD_OP_PW) continue;
		if (o->out.virt && !(o->mode == PW_ADD && o->in[0].uid == m.uid)) continue;
		if (o->mode != PW_ADD || o->in[0].uid != m.uid || s.lse) return P;
		g.used[i] = 1;
		s.lse = 1;
		if (!o->out.virt) {
			s.stats = 1, s.st = o->out;
			const int64_t packed[4] = {s.H * s.Sq, s.Sq, 1, 1};
			if (s.st.dt != D_FLOAT || s.st.byval || !same4(s.st.dim, rd) || !same4(s.st.str, packed)) return DNN_NOT_SUPPORTED_LAYOUT;
		} else if (!sdpa_is_s(&o->out, rd, D_FLOAT)) {
			return P;
		}
		struct sdpa_op *lg = sdpa_take(&g, BD_OP_PW, PW_LOG, o->in[1].uid);
		if (!lg || !o->in[1].virt || lg->in[0].uid != z.uid) return P;
	}
	// The causal mask: S = select(S0, lowest, row >= col).
	struct sdpa_op *sel = sdpa_take(&g, BD_OP_PW, PW_SELECT, sc.uid);
	if (sel) {
		s.causal = 1;
		struct sdpa_tensor mask = sel->in[2];
		if (!sdpa_scalar(&sel->in[1], D_FLOAT) || !sdpa_is_s(&sel->in[0], sd, D_FLOAT) || !sdpa_is_s(&mask, sd, D_BOOLEAN)) return P;
		s.lowest_uid = sel->in[1].uid;
		struct sdpa_op *ge = sdpa_take(&g, BD_OP_PW, PW_CMP_GE, mask.uid);
		if (!ge || ge->prec != D_BOOLEAN || !sdpa_is_s(&ge->in[0], sd, D_INT32) || !sdpa_is_s(&ge->in[1], sd, D_INT32)) return P;
		int64_t row = ge->in[0].uid;
		struct sdpa_op *minus = sdpa_take(&g, BD_OP_PW, PW_SUB, row);
		if (minus) { // bottom-right: (gen_index + Sk) - Sq
			struct sdpa_op *plus = sdpa_take(&g, BD_OP_PW, PW_ADD, minus->in[0].uid);
			if (!plus || minus->prec != D_INT32 || plus->prec != D_INT32 || !sdpa_scalar(&minus->in[1], D_INT32) ||
			    !sdpa_scalar(&plus->in[1], D_INT32) || !sdpa_is_s(&plus->in[0], sd, D_INT32))
				return P;
			s.br = 1, s.sk_uid = plus->in[1].uid, s.sq_uid = minus->in[1].uid;
			row = plus->in[0].uid;
		}
		struct sdpa_op *gr = sdpa_take(&g, BD_OP_PW, PW_GEN_INDEX, row), *gc = sdpa_take(&g, BD_OP_PW, PW_GEN_INDEX, ge->in[1].uid);
		// The index generators compute in int32 (the earlier frontend) or
		// float (the current one), their outputs int32.
		if (!gr || !gc || gr->axis != 2 || gc->axis != 3 || (gr->prec != D_INT32 && gr->prec != D_FLOAT) || gc->prec != gr->prec) return P;
		if (gr->in[0].uid != sel->in[0].uid || gc->in[0].uid != sel->in[0].uid) return P;
		sc = sel->in[0];
	}
	// S = S0 · scale, S0 = Q Kᵀ.
	struct sdpa_op *mul = sdpa_take(&g, BD_OP_PW, PW_MUL, sc.uid);
	if (!mul || mul->prec != D_FLOAT || !sdpa_scalar(&mul->in[1], D_FLOAT) || !sdpa_is_s(&mul->in[0], sd, D_FLOAT)) return P;
	s.scale_uid = mul->in[1].uid;
	struct sdpa_op *bmm1 = sdpa_take(&g, BD_OP_MATMUL, -1, mul->in[0].uid);
	if (!bmm1) return P;
	s.q = bmm1->in[0], s.k = bmm1->in[1];
	for (int i = 0; i < g.n; i++)
		if (!g.used[i]) return P; // an operation the pattern has no place for
	// The real tensors: Q [B,H,Sq,D], Kᵀ [B,Hkv,D,Sk], V [B,Hkv,Sk,D], O [B,H,Sq,D], D's stride 1.
	if (s.q.virt || s.k.virt || s.q.byval || s.k.byval || s.q.dt != dt || s.k.dt != dt) return DNN_BAD_PARAM;
	const int64_t qd[4] = {s.B, s.H, s.Sq, s.D}, kd[4] = {s.B, s.Hkv, s.D, s.Sk}, vd[4] = {s.B, s.Hkv, s.Sk, s.D};
	if (!same4(s.q.dim, qd) || !same4(s.k.dim, kd) || !same4(s.v.dim, vd) || s.H % s.Hkv) return DNN_BAD_PARAM_SHAPE_MISMATCH;
	if (s.q.str[3] != 1 || s.k.str[2] != 1 || s.v.str[3] != 1 || s.o.str[3] != 1) return DNN_NOT_SUPPORTED_LAYOUT;
	int64_t ids[5] = {s.q.uid, s.k.uid, s.v.uid, s.o.uid, s.stats ? s.st.uid : -1};
	for (int i = 0; i < 5; i++)
		for (int j = i + 1; j < 5; j++)
			if (ids[i] == ids[j]) return DNN_BAD_PARAM;
	struct sdpa_graph *out = malloc(sizeof *out);
	*out = s;
	free(d->sdpa);
	d->sdpa = out;
	d->h = *hp;
	return DNN_SUCCESS;
}

// sdpa_copy gives dst a copy of src's graph part (heuristics, engine
// configurations, engines and plans each keep their own).
static void sdpa_copy(struct fake_bd *dst, const struct fake_bd *src) {
	free(dst->sdpa);
	dst->sdpa = NULL;
	if (src->sdpa) {
		dst->sdpa = malloc(sizeof(struct sdpa_graph));
		memcpy(dst->sdpa, src->sdpa, sizeof(struct sdpa_graph));
	}
}

static int sdpa_heur_count(int mode) { return mode == 2 ? 0 : 2; }
static int sdpa_heur_engine(int i) { return i == 0 ? SDPA_ENGINE_REFUSING : SDPA_ENGINE; }

// sdpa_engine_need is the work area engine e needs for the graph, or -1
// where it refuses it.
static int64_t sdpa_engine_need(int e, const struct sdpa_graph *s) {
	if (e != SDPA_ENGINE || s->D % 8 || s->D > 256) return -1;
	// A graph without the statistics' add (virtual or not) has no fused
	// engine: every such graph refused on the H100.
	if (!s->lse) return -1;
	// Its kernel loads 16-byte vectors: operands aligned to 16 bytes.
	if (s->q.align < 16 || s->k.align < 16 || s->v.align < 16 || s->o.align < 16 || (s->stats && s->st.align < 16)) return -1;
	return 4096 + s->B * s->H * s->Sq * 8; // a row's statistics, as the fused kernels keep them
}

static size_t sdpa_span(const struct sdpa_tensor *t) {
	int64_t last = 0;
	for (int i = 0; i < 4; i++) last += (t->dim[i] - 1) * t->str[i];
	return (size_t)(last + 1) * sdpa_dsize(t->dt);
}

struct sdpa_job {
	struct lib_job job;
	struct sdpa_graph s;
	const void *q, *k, *v;
	void *o, *st;
	double scale, lowest;
	int64_t sk, sq; // the bottom-right offset's terms
};

static void run_sdpa(struct lib_job *job) {
	struct sdpa_job *j = (struct sdpa_job *)job;
	const struct sdpa_graph *s = &j->s;
	int dt = s->dt;
	double *sc = malloc(sizeof(double) * (size_t)s->Sk), *acc = malloc(sizeof(double) * (size_t)s->D);
	int64_t group = s->H / s->Hkv;
	for (int64_t b = 0; b < s->B; b++)
		for (int64_t h = 0; h < s->H; h++)
			for (int64_t i = 0; i < s->Sq; i++) {
				int64_t hk = h / group;
				int64_t row = i + (s->br ? j->sk - j->sq : 0);
				double mx = -INFINITY;
				for (int64_t c = 0; c < s->Sk; c++) {
					double dot = 0;
					for (int64_t x = 0; x < s->D; x++) {
						size_t qi = (size_t)(b * s->q.str[0] + h * s->q.str[1] + i * s->q.str[2] + x);
						size_t ki = (size_t)(b * s->k.str[0] + hk * s->k.str[1] + x * s->k.str[2] + c * s->k.str[3]);
						dot += ld(dt, j->q, qi) * ld(dt, j->k, ki);
					}
					double v = (double)(float)dot * j->scale;
					if (s->causal && c > row) v = j->lowest;
					sc[c] = v;
					if (v > mx) mx = v;
				}
				double z = 0;
				for (int64_t c = 0; c < s->Sk; c++) z += sc[c] = exp(sc[c] - mx);
				for (int64_t x = 0; x < s->D; x++) acc[x] = 0;
				for (int64_t c = 0; c < s->Sk; c++) {
					// P is of the inputs' type: rounded as cuDNN rounds it.
					uint16_t pb;
					st(dt, &pb, 0, sc[c] / z);
					double pr = ld(dt, &pb, 0);
					for (int64_t x = 0; x < s->D; x++)
						acc[x] += pr * ld(dt, j->v, (size_t)(b * s->v.str[0] + hk * s->v.str[1] + c * s->v.str[2] + x));
				}
				for (int64_t x = 0; x < s->D; x++) st(dt, j->o, (size_t)(b * s->o.str[0] + h * s->o.str[1] + i * s->o.str[2] + x), acc[x]);
				if (s->stats) ((float *)j->st)[(b * s->H + h) * s->Sq + i] = (float)(mx + log(z));
			}
	free(sc);
	free(acc);
}

// sdpa_execute runs plan (an attention graph's) with pack: every real
// tensor of the graph and every one passed by value named by its id, the
// real ones device memory spanning the tensor, aligned as declared, the
// others host pointers, read now.
static int sdpa_execute(struct fake_dnn *h, struct fake_bd *plan, struct fake_bd *pack) {
	const struct sdpa_graph *s = plan->sdpa;
	int64_t np = 0;
	const int64_t *uids = bd_get(pack, 1000, &np);
	void *const *ptrs = bd_get(pack, 1001, NULL);
	const struct sdpa_tensor *real[5] = {&s->q, &s->k, &s->v, &s->o, s->stats ? &s->st : NULL};
	void *p[5] = {0};
	for (int i = 0; i < 5; i++) {
		if (!real[i]) continue;
		int j = 0;
		while (j < np && uids[j] != real[i]->uid) j++;
		if (j == np) return DNN_BAD_PARAM; // a tensor of the graph without its pointer
		p[i] = ptrs[j];
		if ((uintptr_t)p[i] % (uintptr_t)real[i]->align) return DNN_BAD_PARAM_MISALIGNED;
		if (!dmem_ok(p[i], sdpa_span(real[i]))) return DNN_BAD_PARAM;
	}
	int64_t byval[4] = {s->scale_uid, s->causal ? s->lowest_uid : -1, s->br ? s->sk_uid : -1, s->br ? s->sq_uid : -1};
	const void *vp[4] = {0};
	for (int i = 0; i < 4; i++) {
		if (byval[i] < 0) continue;
		int j = 0;
		while (j < np && uids[j] != byval[i]) j++;
		if (j == np || !ptrs[j]) return DNN_BAD_PARAM;
		vp[i] = ptrs[j];
	}
	struct sdpa_job *o = calloc(1, sizeof *o);
	*o = (struct sdpa_job){.s = *s, .q = p[0], .k = p[1], .v = p[2], .o = p[3], .st = p[4], .scale = *(const float *)vp[0]};
	if (s->causal) o->lowest = *(const float *)vp[1];
	if (s->br) o->sk = *(const int32_t *)vp[2], o->sq = *(const int32_t *)vp[3];
	return dnn_queue(h, &o->job, run_sdpa, sizeof *o);
}
