// The fake cuSOLVER (its dense part, cusolverDn): the calls package
// cusolver makes, checked as the library checks them and computed on the
// CPU by the stream's worker, later, in the stream's order, on
// column-major matrices as cuSOLVER's. The algorithms are the textbook
// ones (LU with partial pivoting, Cholesky, Householder QR, one-sided
// Jacobi SVD, cyclic Jacobi eigenvalues; their complex forms for complex
// elements, Hermitian where symmetric), in double whatever the element
// type; their results are not cuSOLVER's bits (singular and eigenvectors
// may differ in sign), but they satisfy the same equations, and info is
// written as cuSOLVER writes it: 0, or the 1-based index of the zero pivot
// (getrf) or of the leading minor that is not positive definite (potrf).
//
// Workspaces: each _bufferSize reports a size, and a call given less
// fails, before queuing anything (the 64-bit API's workspaces with
// CUSOLVER_STATUS_INVALID_WORKSPACE, the legacy lwork with
// CUSOLVER_STATUS_INVALID_VALUE, as an argument out of range). syevd and
// gesvd ask for a host workspace too, which the call writes while it runs,
// so that a caller's host buffer is checked as cuSOLVER would use it.

#include <complex.h>
#include <math.h>

#include "fakecuda.h"

enum {
	SOLVER_SUCCESS = 0,
	SOLVER_NOT_INITIALIZED = 1,
	SOLVER_INVALID_VALUE = 3,
	SOLVER_EXECUTION_FAILED = 6, // memory outside every device allocation: the real one would fault
	SOLVER_NOT_SUPPORTED = 9,
	SOLVER_INVALID_WORKSPACE = 31,
};

#define SOLVER_MAGIC 0x5017e
#define PARAMS_MAGIC 0x5017f
#define JINFO_MAGIC 0x50180

struct fake_solver {
	int magic;
	CUcontext ctx;
	CUstream stream;
};
struct fake_sparams { int magic; };
struct fake_jinfo { int magic; };

static int solver_live(struct fake_solver *h) { return h && h->magic == SOLVER_MAGIC; }
static int mem_ok(const void *p, size_t n) { return n == 0 || (p && range_ok((CUdeviceptr)(uintptr_t)p, n)); }

EXPORT int cusolverGetProperty(int type, int *value) {
	FAULT("cusolverGetProperty");
	if (!value || type < 0 || type > 2) return SOLVER_INVALID_VALUE;
	static const int v[3] = {11, 7, 0}; // cuSOLVER 11.7.0, CUDA 12.6's
	*value = v[type];
	return SOLVER_SUCCESS;
}

EXPORT int cusolverDnCreate(struct fake_solver **out) {
	FAULT("cusolverDnCreate");
	if (!out) return SOLVER_INVALID_VALUE;
	pthread_mutex_lock(&mu);
	int ok = initialized && ctx_live(current);
	pthread_mutex_unlock(&mu);
	if (!ok) return SOLVER_NOT_INITIALIZED;
	struct fake_solver *h = calloc(1, sizeof *h);
	h->magic = SOLVER_MAGIC;
	h->ctx = current;
	*out = h;
	return SOLVER_SUCCESS;
}

EXPORT int cusolverDnDestroy(struct fake_solver *h) {
	FAULT("cusolverDnDestroy");
	if (!solver_live(h)) return SOLVER_NOT_INITIALIZED;
	h->magic = 0;
	free(h);
	return SOLVER_SUCCESS;
}

EXPORT int cusolverDnSetStream(struct fake_solver *h, CUstream s) {
	FAULT("cusolverDnSetStream");
	if (!solver_live(h)) return SOLVER_NOT_INITIALIZED;
	pthread_mutex_lock(&mu);
	int ok = !s || (stream_live(s) && s->ctx == h->ctx);
	pthread_mutex_unlock(&mu);
	if (!ok) return SOLVER_INVALID_VALUE;
	h->stream = s;
	return SOLVER_SUCCESS;
}

static int obj_create(void **out, int magic) {
	if (!out) return SOLVER_INVALID_VALUE;
	int *p = calloc(1, sizeof(int));
	*p = magic;
	*out = p;
	return SOLVER_SUCCESS;
}

static int obj_destroy(void *p, int magic) {
	if (!p || *(int *)p != magic) return SOLVER_INVALID_VALUE;
	*(int *)p = 0;
	free(p);
	return SOLVER_SUCCESS;
}

EXPORT int cusolverDnCreateParams(void **out) { FAULT("cusolverDnCreateParams"); return obj_create(out, PARAMS_MAGIC); }
EXPORT int cusolverDnDestroyParams(void *p) { FAULT("cusolverDnDestroyParams"); return obj_destroy(p, PARAMS_MAGIC); }
EXPORT int cusolverDnCreateGesvdjInfo(void **out) { FAULT("cusolverDnCreateGesvdjInfo"); return obj_create(out, JINFO_MAGIC); }
EXPORT int cusolverDnDestroyGesvdjInfo(void *p) { FAULT("cusolverDnDestroyGesvdjInfo"); return obj_destroy(p, JINFO_MAGIC); }
EXPORT int cusolverDnCreateSyevjInfo(void **out) { FAULT("cusolverDnCreateSyevjInfo"); return obj_create(out, JINFO_MAGIC + 1); }
EXPORT int cusolverDnDestroySyevjInfo(void *p) { FAULT("cusolverDnDestroySyevjInfo"); return obj_destroy(p, JINFO_MAGIC + 1); }

// usable returns the status for a call on h with params p (NULL where the
// call takes none): its context must be current and its stream live.
static int usable(struct fake_solver *h, struct fake_sparams *p, int takes_params) {
	if (!solver_live(h)) return SOLVER_NOT_INITIALIZED;
	if (takes_params && (!p || p->magic != PARAMS_MAGIC)) return SOLVER_INVALID_VALUE;
	pthread_mutex_lock(&mu);
	int ok = current == h->ctx && ctx_live(current) && (!h->stream || stream_live(h->stream));
	pthread_mutex_unlock(&mu);
	return ok ? SOLVER_SUCCESS : SOLVER_EXECUTION_FAILED;
}

// ---- elements and matrices ---------------------------------------------------

enum { T_F32 = 0, T_F64 = 1, T_C32 = 4, T_C64 = 5 };

// elem returns the size of an element type, 0 for one the fake lacks;
// ctypes returns the status for a data and compute type pair of the
// 64-bit API's calls, which take real and complex matrices alike.
static size_t elem(int t) { return t == T_F32 ? 4 : t == T_F64 ? 8 : t == T_C32 ? 8 : t == T_C64 ? 16 : 0; }
static int ctypes(int data, int compute) {
	if (!elem(data) || data != compute) return SOLVER_INVALID_VALUE;
	return SOLVER_SUCCESS;
}
// rtypes returns the status for the type of a call's real output
// (singular values, eigenvalues) beside its compute type: the real type
// of the same precision.
static int real_of(int t) { return t == T_C32 ? T_F32 : t == T_C64 ? T_F64 : t; }
static int rtypes(int data, int compute) {
	if (!elem(compute) || data != real_of(compute)) return SOLVER_INVALID_VALUE;
	return SOLVER_SUCCESS;
}
static int is_dbl(int t) { return t == T_F64 || t == T_C64; }
static int is_cplx(int t) { return t == T_C32 || t == T_C64; }

// span is the bytes an m×n column-major matrix of leading dimension ld
// spans.
static size_t span(int64_t m, int64_t n, int64_t ld, size_t es) {
	if (m <= 0 || n <= 0) return 0;
	return ((size_t)(n - 1) * (size_t)ld + (size_t)m) * es;
}

// load copies an m×n matrix into a packed double array; store writes one
// back.
static double *load(const void *p, int dbl, int64_t m, int64_t n, int64_t ld) {
	double *a = calloc((size_t)(m * n) + 1, sizeof *a);
	for (int64_t j = 0; j < n; j++)
		for (int64_t i = 0; i < m; i++)
			a[j * m + i] = dbl ? ((const double *)p)[j * ld + i] : ((const float *)p)[j * ld + i];
	return a;
}
static void store(void *p, int dbl, int64_t m, int64_t n, int64_t ld, const double *a) {
	for (int64_t j = 0; j < n; j++)
		for (int64_t i = 0; i < m; i++) {
			if (dbl) ((double *)p)[j * ld + i] = a[j * m + i];
			else ((float *)p)[j * ld + i] = (float)a[j * m + i];
		}
}
static void store_vec(void *p, int dbl, int64_t n, const double *v) { store(p, dbl, n, 1, n, v); }

// zload and zstore are load and store for complex elements (dbl: complex
// double, else complex float).
static double complex *zload(const void *p, int dbl, int64_t m, int64_t n, int64_t ld) {
	double complex *a = calloc((size_t)(m * n) + 1, sizeof *a);
	for (int64_t j = 0; j < n; j++)
		for (int64_t i = 0; i < m; i++)
			a[j * m + i] = dbl ? ((const double complex *)p)[j * ld + i] : ((const float complex *)p)[j * ld + i];
	return a;
}
static void zstore(void *p, int dbl, int64_t m, int64_t n, int64_t ld, const double complex *a) {
	for (int64_t j = 0; j < n; j++)
		for (int64_t i = 0; i < m; i++) {
			if (dbl) ((double complex *)p)[j * ld + i] = a[j * m + i];
			else ((float complex *)p)[j * ld + i] = (float complex)a[j * m + i];
		}
}

#define AT(a, m, i, j) (a)[(j) * (m) + (i)]

// ---- the algorithms, on packed column-major doubles ----------------------
// (LU and Cholesky, for both kinds of element, in solver_elem.h)

// householder makes the reflector H = I - tau v vᵀ (v(0) = 1) that maps
// x (length len, stride 1) to (beta, 0, ...): x(1..) becomes v(1..),
// x(0) beta; returns tau.
static double householder(double *x, int64_t len) {
	double alpha = x[0], norm = 0;
	for (int64_t i = 1; i < len; i++) norm += x[i] * x[i];
	if (norm == 0) return 0;
	double beta = -copysign(sqrt(alpha * alpha + norm), alpha);
	double tau = (beta - alpha) / beta, scale = 1 / (alpha - beta);
	for (int64_t i = 1; i < len; i++) x[i] *= scale;
	x[0] = beta;
	return tau;
}

// reflect applies H = I - tau v vᵀ (v(0) = 1, v of length len from row
// r0) to the columns c0..c1 of the m×n c, from the left.
static void reflect_left(double *c, int64_t m, int64_t c0, int64_t c1, int64_t r0, const double *v, int64_t len, double tau) {
	if (tau == 0) return;
	for (int64_t j = c0; j < c1; j++) {
		double s = AT(c, m, r0, j);
		for (int64_t i = 1; i < len; i++) s += v[i] * AT(c, m, r0 + i, j);
		s *= tau;
		AT(c, m, r0, j) -= s;
		for (int64_t i = 1; i < len; i++) AT(c, m, r0 + i, j) -= s * v[i];
	}
}

// reflect_right applies H (acting on columns c0..c0+len) to the rows of
// the m×n c, from the right.
static void reflect_right(double *c, int64_t m, int64_t c0, const double *v, int64_t len, double tau) {
	if (tau == 0) return;
	for (int64_t i = 0; i < m; i++) {
		double s = AT(c, m, i, c0);
		for (int64_t k = 1; k < len; k++) s += AT(c, m, i, c0 + k) * v[k];
		s *= tau;
		AT(c, m, i, c0) -= s;
		for (int64_t k = 1; k < len; k++) AT(c, m, i, c0 + k) -= s * v[k];
	}
}

// qr factors the m×n a in place as geqrf: R on and above the diagonal,
// the reflectors' vectors below it, tau (min(m,n)).
static void qr(double *a, int64_t m, int64_t n, double *tau) {
	int64_t k = m < n ? m : n;
	for (int64_t j = 0; j < k; j++) {
		double *x = &AT(a, m, j, j);
		tau[j] = householder(x, m - j);
		double keep = x[0];
		x[0] = 1;
		reflect_left(a, m, j + 1, n, j, x, m - j, tau[j]);
		x[0] = keep;
	}
}

// vec returns reflector i's vector (v(0) = 1) from geqrf's a (m rows).
static double *vec(const double *a, int64_t m, int64_t i) {
	double *v = calloc((size_t)(m - i) + 1, sizeof *v);
	v[0] = 1;
	for (int64_t r = 1; r < m - i; r++) v[r] = AT(a, m, i + r, i);
	return v;
}

// sweep_tol is the Jacobi methods' threshold.
static const double sweep_tol = 1e-15;

// svd_tall computes the one-sided Jacobi SVD of the m×n w (m >= n):
// afterwards w's columns are U·S (unsorted), v (n×n) is V.
static void jacobi_svd(double *w, int64_t m, int64_t n, double *v) {
	for (int64_t i = 0; i < n * n; i++) v[i] = 0;
	for (int64_t i = 0; i < n; i++) AT(v, n, i, i) = 1;
	for (int sweep = 0; sweep < 60; sweep++) {
		int rotated = 0;
		for (int64_t p = 0; p < n; p++)
			for (int64_t q = p + 1; q < n; q++) {
				double alpha = 0, beta = 0, gamma = 0;
				for (int64_t i = 0; i < m; i++) {
					alpha += AT(w, m, i, p) * AT(w, m, i, p);
					beta += AT(w, m, i, q) * AT(w, m, i, q);
					gamma += AT(w, m, i, p) * AT(w, m, i, q);
				}
				if (gamma == 0 || fabs(gamma) <= sweep_tol * sqrt(alpha * beta)) continue;
				rotated = 1;
				double zeta = (beta - alpha) / (2 * gamma);
				double t = (zeta >= 0 ? 1 : -1) / (fabs(zeta) + sqrt(1 + zeta * zeta));
				double c = 1 / sqrt(1 + t * t), s = c * t;
				for (int64_t i = 0; i < m; i++) {
					double x = AT(w, m, i, p), y = AT(w, m, i, q);
					AT(w, m, i, p) = c * x - s * y, AT(w, m, i, q) = s * x + c * y;
				}
				for (int64_t i = 0; i < n; i++) {
					double x = AT(v, n, i, p), y = AT(v, n, i, q);
					AT(v, n, i, p) = c * x - s * y, AT(v, n, i, q) = s * x + c * y;
				}
			}
		if (!rotated) break;
	}
}

// complete makes columns from..m-1 of the m×m u orthonormal to the ones
// before them (Gram-Schmidt on the unit vectors).
static void complete(double *u, int64_t m, int64_t from) {
	int64_t next = 0;
	for (int64_t j = from; j < m; j++) {
		for (; next < m; next++) {
			double *c = &AT(u, m, 0, j);
			for (int64_t i = 0; i < m; i++) c[i] = i == next ? 1 : 0;
			for (int pass = 0; pass < 2; pass++)
				for (int64_t k = 0; k < j; k++) {
					double d = 0;
					for (int64_t i = 0; i < m; i++) d += AT(u, m, i, k) * c[i];
					for (int64_t i = 0; i < m; i++) c[i] -= d * AT(u, m, i, k);
				}
			double nrm = 0;
			for (int64_t i = 0; i < m; i++) nrm += c[i] * c[i];
			if (nrm > 1e-6) {
				nrm = sqrt(nrm);
				for (int64_t i = 0; i < m; i++) c[i] /= nrm;
				next++;
				break;
			}
		}
	}
}

// svd computes the m×n a's SVD, any shape: s (min(m,n), descending), u
// (m×m) and v (n×n), full, either NULL for none.
static void svd(const double *a, int64_t m, int64_t n, double *s, double *u, double *v) {
	int wide = m < n;
	int64_t rows = wide ? n : m, cols = wide ? m : n;
	double *w = calloc((size_t)(rows * cols) + 1, sizeof *w), *vv = calloc((size_t)(cols * cols) + 1, sizeof *vv);
	for (int64_t j = 0; j < cols; j++)
		for (int64_t i = 0; i < rows; i++) AT(w, rows, i, j) = wide ? AT(a, m, j, i) : AT(a, m, i, j);
	jacobi_svd(w, rows, cols, vv);
	// Sort the columns by norm, descending.
	double *norm = calloc((size_t)cols + 1, sizeof *norm);
	int64_t *order = calloc((size_t)cols + 1, sizeof *order);
	for (int64_t j = 0; j < cols; j++) {
		double t = 0;
		for (int64_t i = 0; i < rows; i++) t += AT(w, rows, i, j) * AT(w, rows, i, j);
		norm[j] = sqrt(t), order[j] = j;
	}
	for (int64_t i = 1; i < cols; i++)
		for (int64_t k = i; k > 0 && norm[order[k]] > norm[order[k - 1]]; k--) {
			int64_t t = order[k];
			order[k] = order[k - 1], order[k - 1] = t;
		}
	// The big side's vectors: w's columns normalized, completed.
	double *big = calloc((size_t)(rows * rows) + 1, sizeof *big), *small = calloc((size_t)(cols * cols) + 1, sizeof *small);
	int64_t have = 0;
	for (int64_t k = 0; k < cols; k++) {
		int64_t j = order[k];
		s[k] = norm[j];
		for (int64_t i = 0; i < cols; i++) AT(small, cols, i, k) = AT(vv, cols, i, j);
		if (norm[j] > 1e-300 && have == k) {
			for (int64_t i = 0; i < rows; i++) AT(big, rows, i, k) = AT(w, rows, i, j) / norm[j];
			have++;
		}
	}
	complete(big, rows, have);
	double *uu = wide ? small : big, *vo = wide ? big : small;
	if (u) memcpy(u, uu, (size_t)(m * m) * sizeof *u);
	if (v) memcpy(v, vo, (size_t)(n * n) * sizeof *v);
	free(w), free(vv), free(norm), free(order), free(big), free(small);
}

// eig computes the symmetric n×n a's eigenvalues (ascending, into w) and
// vectors (columns of v), from its uplo triangle.
static void eig(const double *a, int64_t n, int upper, double *w, double *v) {
	double *s = calloc((size_t)(n * n) + 1, sizeof *s), *q = calloc((size_t)(n * n) + 1, sizeof *q);
	for (int64_t j = 0; j < n; j++)
		for (int64_t i = 0; i < n; i++) {
			int mine = upper ? i <= j : i >= j;
			AT(s, n, i, j) = mine ? AT(a, n, i, j) : AT(a, n, j, i);
		}
	for (int64_t i = 0; i < n; i++) AT(q, n, i, i) = 1;
	for (int sweep = 0; sweep < 60; sweep++) {
		double off = 0, diag = 0;
		for (int64_t j = 0; j < n; j++)
			for (int64_t i = 0; i < n; i++) {
				if (i != j) off += AT(s, n, i, j) * AT(s, n, i, j);
				else diag += AT(s, n, i, j) * AT(s, n, i, j);
			}
		if (off <= sweep_tol * sweep_tol * diag || off == 0) break;
		for (int64_t p = 0; p < n; p++)
			for (int64_t r = p + 1; r < n; r++) {
				double apq = AT(s, n, p, r);
				if (apq == 0) continue;
				double theta = (AT(s, n, r, r) - AT(s, n, p, p)) / (2 * apq);
				double t = (theta >= 0 ? 1 : -1) / (fabs(theta) + sqrt(theta * theta + 1));
				double c = 1 / sqrt(t * t + 1), sn = t * c;
				for (int64_t k = 0; k < n; k++) { // columns p, r
					double x = AT(s, n, k, p), y = AT(s, n, k, r);
					AT(s, n, k, p) = c * x - sn * y, AT(s, n, k, r) = sn * x + c * y;
				}
				for (int64_t k = 0; k < n; k++) { // rows p, r
					double x = AT(s, n, p, k), y = AT(s, n, r, k);
					AT(s, n, p, k) = c * x - sn * y, AT(s, n, r, k) = sn * x + c * y;
				}
				for (int64_t k = 0; k < n; k++) {
					double x = AT(q, n, k, p), y = AT(q, n, k, r);
					AT(q, n, k, p) = c * x - sn * y, AT(q, n, k, r) = sn * x + c * y;
				}
			}
	}
	int64_t *order = calloc((size_t)n + 1, sizeof *order);
	for (int64_t i = 0; i < n; i++) order[i] = i;
	for (int64_t i = 1; i < n; i++)
		for (int64_t k = i; k > 0 && AT(s, n, order[k], order[k]) < AT(s, n, order[k - 1], order[k - 1]); k--) {
			int64_t t = order[k];
			order[k] = order[k - 1], order[k - 1] = t;
		}
	for (int64_t k = 0; k < n; k++) {
		w[k] = AT(s, n, order[k], order[k]);
		if (v)
			for (int64_t i = 0; i < n; i++) AT(v, n, i, k) = AT(q, n, i, order[k]);
	}
	free(s), free(q), free(order);
}

// The complex QR, SVD and Hermitian eigenvalues: as qr, svd and eig, on
// complex elements, as LAPACK's zgeqrf (reflectors H = I - tau·v·vᴴ,
// Q = H1·H2·…·Hk, R = Hkᴴ·…·H1ᴴ·A), zgesvd (A = U·S·Vᴴ) and zheevd
// (A = V·Λ·Vᴴ) define them.

// zhouseholder makes H with Hᴴ·x = (beta, 0, ...), beta real (zlarfg):
// x(1..) becomes v(1..), x(0) beta; returns tau.
static double complex zhouseholder(double complex *x, int64_t len) {
	double complex alpha = x[0];
	double norm = 0;
	for (int64_t i = 1; i < len; i++) norm += creal(x[i] * conj(x[i]));
	if (norm == 0 && cimag(alpha) == 0) return 0;
	double beta = -copysign(sqrt(creal(alpha * conj(alpha)) + norm), creal(alpha));
	double complex tau = (beta - alpha) / beta, scale = 1 / (alpha - beta);
	for (int64_t i = 1; i < len; i++) x[i] *= scale;
	x[0] = beta;
	return tau;
}

// zreflect_left applies I - tau·v·vᴴ (v from row r0, of length len) to
// columns c0..c1 of the m-row c from the left; zreflect_right applies it
// (acting on columns c0..c0+len) to the rows of c from the right.
static void zreflect_left(double complex *c, int64_t m, int64_t c0, int64_t c1, int64_t r0, const double complex *v, int64_t len, double complex tau) {
	if (tau == 0) return;
	for (int64_t j = c0; j < c1; j++) {
		double complex s = 0;
		for (int64_t i = 0; i < len; i++) s += conj(v[i]) * AT(c, m, r0 + i, j);
		s *= tau;
		for (int64_t i = 0; i < len; i++) AT(c, m, r0 + i, j) -= s * v[i];
	}
}
static void zreflect_right(double complex *c, int64_t m, int64_t c0, const double complex *v, int64_t len, double complex tau) {
	if (tau == 0) return;
	for (int64_t i = 0; i < m; i++) {
		double complex s = 0;
		for (int64_t k = 0; k < len; k++) s += AT(c, m, i, c0 + k) * v[k];
		s *= tau;
		for (int64_t k = 0; k < len; k++) AT(c, m, i, c0 + k) -= s * conj(v[k]);
	}
}

static void zqr(double complex *a, int64_t m, int64_t n, double complex *tau) {
	int64_t k = m < n ? m : n;
	for (int64_t j = 0; j < k; j++) {
		double complex *x = &AT(a, m, j, j);
		tau[j] = zhouseholder(x, m - j);
		double complex keep = x[0];
		x[0] = 1;
		zreflect_left(a, m, j + 1, n, j, x, m - j, conj(tau[j])); // H(j)ᴴ
		x[0] = keep;
	}
}

static double complex *zvec(const double complex *a, int64_t m, int64_t i) {
	double complex *v = calloc((size_t)(m - i) + 1, sizeof *v);
	v[0] = 1;
	for (int64_t r = 1; r < m - i; r++) v[r] = AT(a, m, i + r, i);
	return v;
}

// zsvd computes the m×n (m >= n) a's SVD by one-sided Jacobi: s (n,
// descending), u (m×m, full) and v (n×n), either NULL for none.
static void zsvd(const double complex *a, int64_t m, int64_t n, double *s, double complex *u, double complex *v) {
	double complex *w = calloc((size_t)(m * n) + 1, sizeof *w), *vv = calloc((size_t)(n * n) + 1, sizeof *vv);
	memcpy(w, a, (size_t)(m * n) * sizeof *w);
	for (int64_t i = 0; i < n; i++) AT(vv, n, i, i) = 1;
	for (int sweep = 0; sweep < 60; sweep++) {
		int rotated = 0;
		for (int64_t p = 0; p < n; p++)
			for (int64_t q = p + 1; q < n; q++) {
				double alpha = 0, beta = 0;
				double complex gamma = 0;
				for (int64_t i = 0; i < m; i++) {
					alpha += creal(AT(w, m, i, p) * conj(AT(w, m, i, p)));
					beta += creal(AT(w, m, i, q) * conj(AT(w, m, i, q)));
					gamma += conj(AT(w, m, i, p)) * AT(w, m, i, q);
				}
				double g = cabs(gamma);
				if (g == 0 || g <= sweep_tol * sqrt(alpha * beta)) continue;
				rotated = 1;
				// Column q times conj(phase) makes the product real, g.
				double complex ph = conj(gamma / g);
				for (int64_t i = 0; i < m; i++) AT(w, m, i, q) *= ph;
				for (int64_t i = 0; i < n; i++) AT(vv, n, i, q) *= ph;
				double zeta = (beta - alpha) / (2 * g);
				double t = (zeta >= 0 ? 1 : -1) / (fabs(zeta) + sqrt(1 + zeta * zeta));
				double c = 1 / sqrt(1 + t * t), sn = c * t;
				for (int64_t i = 0; i < m; i++) {
					double complex x = AT(w, m, i, p), y = AT(w, m, i, q);
					AT(w, m, i, p) = c * x - sn * y, AT(w, m, i, q) = sn * x + c * y;
				}
				for (int64_t i = 0; i < n; i++) {
					double complex x = AT(vv, n, i, p), y = AT(vv, n, i, q);
					AT(vv, n, i, p) = c * x - sn * y, AT(vv, n, i, q) = sn * x + c * y;
				}
			}
		if (!rotated) break;
	}
	double *norm = calloc((size_t)n + 1, sizeof *norm);
	int64_t *order = calloc((size_t)n + 1, sizeof *order);
	for (int64_t j = 0; j < n; j++) {
		double t = 0;
		for (int64_t i = 0; i < m; i++) t += creal(AT(w, m, i, j) * conj(AT(w, m, i, j)));
		norm[j] = sqrt(t), order[j] = j;
	}
	for (int64_t i = 1; i < n; i++)
		for (int64_t k = i; k > 0 && norm[order[k]] > norm[order[k - 1]]; k--) {
			int64_t t = order[k];
			order[k] = order[k - 1], order[k - 1] = t;
		}
	double complex *big = calloc((size_t)(m * m) + 1, sizeof *big);
	int64_t have = 0;
	for (int64_t k = 0; k < n; k++) {
		int64_t j = order[k];
		s[k] = norm[j];
		if (v)
			for (int64_t i = 0; i < n; i++) AT(v, n, i, k) = AT(vv, n, i, j);
		if (norm[j] > 1e-300 && have == k) {
			for (int64_t i = 0; i < m; i++) AT(big, m, i, k) = AT(w, m, i, j) / norm[j];
			have++;
		}
	}
	// Complete U by Gram-Schmidt on the unit vectors.
	int64_t next = 0;
	for (int64_t j = have; j < m; j++)
		for (; next < m; next++) {
			double complex *c = &AT(big, m, 0, j);
			for (int64_t i = 0; i < m; i++) c[i] = i == next ? 1 : 0;
			for (int pass = 0; pass < 2; pass++)
				for (int64_t k = 0; k < j; k++) {
					double complex d = 0;
					for (int64_t i = 0; i < m; i++) d += conj(AT(big, m, i, k)) * c[i];
					for (int64_t i = 0; i < m; i++) c[i] -= d * AT(big, m, i, k);
				}
			double nrm = 0;
			for (int64_t i = 0; i < m; i++) nrm += creal(c[i] * conj(c[i]));
			if (nrm > 1e-6) {
				nrm = sqrt(nrm);
				for (int64_t i = 0; i < m; i++) c[i] /= nrm;
				next++;
				break;
			}
		}
	if (u) memcpy(u, big, (size_t)(m * m) * sizeof *u);
	free(w), free(vv), free(norm), free(order), free(big);
}

// zeig computes the Hermitian n×n a's eigenvalues (ascending, into w) and
// vectors (columns of v), from its uplo triangle, by cyclic Jacobi: each
// rotation first turns the pivot real by a phase on its column, then
// rotates as eig does.
static void zeig(const double complex *a, int64_t n, int upper, double *w, double complex *v) {
	double complex *s = calloc((size_t)(n * n) + 1, sizeof *s), *q = calloc((size_t)(n * n) + 1, sizeof *q);
	for (int64_t j = 0; j < n; j++)
		for (int64_t i = 0; i < n; i++) {
			if (i == j) AT(s, n, i, j) = creal(AT(a, n, i, j)); // the diagonal's imaginary parts are not read
			else if (upper ? i < j : i > j) AT(s, n, i, j) = AT(a, n, i, j);
			else AT(s, n, i, j) = conj(AT(a, n, j, i));
		}
	for (int64_t i = 0; i < n; i++) AT(q, n, i, i) = 1;
	for (int sweep = 0; sweep < 60; sweep++) {
		double off = 0, diag = 0;
		for (int64_t j = 0; j < n; j++)
			for (int64_t i = 0; i < n; i++) {
				double x = creal(AT(s, n, i, j) * conj(AT(s, n, i, j)));
				if (i != j) off += x;
				else diag += x;
			}
		if (off <= sweep_tol * sweep_tol * diag || off == 0) break;
		for (int64_t p = 0; p < n; p++)
			for (int64_t r = p + 1; r < n; r++) {
				double complex apq = AT(s, n, p, r);
				double g = cabs(apq);
				if (g == 0) continue;
				// S ← Dᴴ·S·D, D = diag(.., conj(phase) at r, ..): S(p,r) = g.
				double complex ph = conj(apq / g);
				for (int64_t k = 0; k < n; k++) AT(s, n, k, r) *= ph;
				for (int64_t k = 0; k < n; k++) AT(s, n, r, k) *= conj(ph);
				for (int64_t k = 0; k < n; k++) AT(q, n, k, r) *= ph;
				AT(s, n, r, r) = creal(AT(s, n, r, r));
				double theta = (creal(AT(s, n, r, r)) - creal(AT(s, n, p, p))) / (2 * g);
				double t = (theta >= 0 ? 1 : -1) / (fabs(theta) + sqrt(theta * theta + 1));
				double c = 1 / sqrt(t * t + 1), sn = t * c;
				for (int64_t k = 0; k < n; k++) { // columns p, r
					double complex x = AT(s, n, k, p), y = AT(s, n, k, r);
					AT(s, n, k, p) = c * x - sn * y, AT(s, n, k, r) = sn * x + c * y;
				}
				for (int64_t k = 0; k < n; k++) { // rows p, r
					double complex x = AT(s, n, p, k), y = AT(s, n, r, k);
					AT(s, n, p, k) = c * x - sn * y, AT(s, n, r, k) = sn * x + c * y;
				}
				for (int64_t k = 0; k < n; k++) {
					double complex x = AT(q, n, k, p), y = AT(q, n, k, r);
					AT(q, n, k, p) = c * x - sn * y, AT(q, n, k, r) = sn * x + c * y;
				}
			}
	}
	int64_t *order = calloc((size_t)n + 1, sizeof *order);
	for (int64_t i = 0; i < n; i++) order[i] = i;
	for (int64_t i = 1; i < n; i++)
		for (int64_t k = i; k > 0 && creal(AT(s, n, order[k], order[k])) < creal(AT(s, n, order[k - 1], order[k - 1])); k--) {
			int64_t t = order[k];
			order[k] = order[k - 1], order[k - 1] = t;
		}
	for (int64_t k = 0; k < n; k++) {
		w[k] = creal(AT(s, n, order[k], order[k]));
		if (v)
			for (int64_t i = 0; i < n; i++) AT(v, n, i, k) = AT(q, n, i, order[k]);
	}
	free(s), free(q), free(order);
}

// ---- the queued work -----------------------------------------------------

enum solver_kind { S_GELS, S_GETRF, S_GETRS, S_POTRF, S_POTRS, S_POTRI, S_GEQRF, S_ORGQR, S_ORMQR, S_GESVD, S_SYEVD, S_GESVDJB, S_SYEVJB, S_POTRFB };

struct solver_op {
	struct lib_job job;
	enum solver_kind kind;
	int dbl, cplx; // double precision; complex elements
	int64_t m, n, k, lda, ldb, ldu, ldv, ldx, batch;
	int trans, upper, side, vectors, jobu, jobvt;
	void *a, *b, *x, *tau, *s, *u, *v, *info;
	int64_t *ipiv;
};

static void put_info(void *info, int64_t i, int v) {
	if (info) ((int *)info)[i] = v;
}

// The LU and Cholesky and the queued work, for the reals and for the
// complex numbers.
#define E double
#define F(name) name
#define CONJ(x) (x)
#define RE(x) (x)
#define ABS(x) fabs(x)
#define CPLX 0
#include "solver_elem.h"

#define E double complex
#define F(name) z##name
#define CONJ(x) conj(x)
#define RE(x) creal(x)
#define ABS(x) cabs(x)
#define CPLX 1
#include "solver_elem.h"

static void run_solver(struct lib_job *job) {
	struct solver_op *o = (struct solver_op *)job;
	if (o->cplx) zperform(o);
	else perform(o);
}

// queue copies o into a job on h's stream (or the graph it captures).
static int queue(struct fake_solver *h, struct solver_op o) {
	struct solver_op *p = malloc(sizeof *p);
	*p = o;
	p->job = (struct lib_job){run_solver, sizeof *p};
	return enqueue_job(h->stream, &p->job) == SUCCESS ? SOLVER_SUCCESS : SOLVER_EXECUTION_FAILED;
}

// ---- the 64-bit API ---------------------------------------------------------

// The fake's workspace sizes, in bytes: what a caller must give.
static size_t ws_getrf(int64_t m, int64_t n, size_t es) { return (size_t)(m < n ? m : n) * es + 16; }
static size_t ws_potrf(int64_t n, size_t es) { return (size_t)n * es + 16; }
static size_t ws_geqrf(int64_t n, size_t es) { return (size_t)n * es + 32; }
static size_t ws_gesvd(int64_t m, int64_t n, size_t es) { return (size_t)(m + n) * es + 64; }
static size_t ws_syevd(int64_t n, size_t es) { return (size_t)(2 * n) * es + 64; }
static const size_t host_ws = 24; // gesvd's and syevd's host workspace

#define CHECK(expr) do { int c_ = (expr); if (c_) return c_; } while (0)

// workspace checks a call's workspaces against the sizes the fake
// reported: enough, and device memory where on the device; writes the
// host one, as cuSOLVER uses it during the call.
static int workspace(void *dev, size_t dev_size, size_t dev_need, void *host, size_t host_size, size_t host_need) {
	if (dev_size < dev_need || host_size < host_need) return SOLVER_INVALID_WORKSPACE;
	if (dev_need && !mem_ok(dev, dev_need)) return SOLVER_EXECUTION_FAILED;
	if (host_need) {
		if (!host) return SOLVER_INVALID_WORKSPACE;
		memset(host, 0x5a, host_need);
	}
	return SOLVER_SUCCESS;
}

static int mat_ok(const void *a, int64_t m, int64_t n, int64_t ld, size_t es) {
	return mem_ok(a, span(m, n, ld, es)) ? SOLVER_SUCCESS : SOLVER_EXECUTION_FAILED;
}

EXPORT int cusolverDnXgetrf_bufferSize(struct fake_solver *h, struct fake_sparams *p, int64_t m, int64_t n, int dt, const void *a, int64_t lda, int ct, size_t *dev, size_t *host) {
	FAULT("cusolverDnXgetrf_bufferSize");
	CHECK(usable(h, p, 1));
	CHECK(ctypes(dt, ct));
	if (m < 0 || n < 0 || lda < (m > 1 ? m : 1) || !dev || !host) return SOLVER_INVALID_VALUE;
	*dev = ws_getrf(m, n, elem(dt)), *host = 0;
	return SOLVER_SUCCESS;
}

EXPORT int cusolverDnXgetrf(struct fake_solver *h, struct fake_sparams *p, int64_t m, int64_t n, int dt, void *a, int64_t lda, int64_t *ipiv, int ct,
	void *dev, size_t dev_size, void *host, size_t host_size, int *info) {
	FAULT("cusolverDnXgetrf");
	CHECK(usable(h, p, 1));
	CHECK(ctypes(dt, ct));
	if (m < 0 || n < 0 || lda < (m > 1 ? m : 1) || !info) return SOLVER_INVALID_VALUE;
	size_t es = elem(dt);
	CHECK(workspace(dev, dev_size, ws_getrf(m, n, es), host, host_size, 0));
	int64_t k = m < n ? m : n;
	CHECK(mat_ok(a, m, n, lda, es));
	if (!mem_ok(info, 4) || (ipiv && !mem_ok(ipiv, (size_t)k * 8))) return SOLVER_EXECUTION_FAILED;
	if (!ipiv) return SOLVER_NOT_SUPPORTED; // the fake always pivots
	return queue(h, (struct solver_op){.kind = S_GETRF, .dbl = dt == T_F64 || dt == T_C64, .cplx = dt == T_C32 || dt == T_C64, .m = m, .n = n, .lda = lda, .a = a, .ipiv = ipiv, .info = info});
}

EXPORT int cusolverDnXgetrs(struct fake_solver *h, struct fake_sparams *p, int trans, int64_t n, int64_t nrhs, int dta, const void *a, int64_t lda, const int64_t *ipiv,
	int dtb, void *b, int64_t ldb, int *info) {
	FAULT("cusolverDnXgetrs");
	CHECK(usable(h, p, 1));
	CHECK(ctypes(dta, dtb));
	if (trans < 0 || trans > 2 || n < 0 || nrhs < 0 || lda < (n > 1 ? n : 1) || ldb < (n > 1 ? n : 1) || !info) return SOLVER_INVALID_VALUE;
	size_t es = elem(dta);
	CHECK(mat_ok(a, n, n, lda, es));
	CHECK(mat_ok(b, n, nrhs, ldb, es));
	if (!mem_ok(info, 4) || !mem_ok(ipiv, (size_t)n * 8)) return SOLVER_EXECUTION_FAILED;
	return queue(h, (struct solver_op){.kind = S_GETRS, .dbl = dta == T_F64 || dta == T_C64, .cplx = dta == T_C32 || dta == T_C64, .n = n, .k = nrhs, .lda = lda, .ldb = ldb,
		.trans = dta == T_C32 || dta == T_C64 ? trans : trans != 0, .a = (void *)a, .ipiv = (int64_t *)ipiv, .b = b, .info = info});
}

EXPORT int cusolverDnXpotrf_bufferSize(struct fake_solver *h, struct fake_sparams *p, int uplo, int64_t n, int dt, const void *a, int64_t lda, int ct, size_t *dev, size_t *host) {
	FAULT("cusolverDnXpotrf_bufferSize");
	CHECK(usable(h, p, 1));
	CHECK(ctypes(dt, ct));
	if ((uplo != 0 && uplo != 1) || n < 0 || lda < (n > 1 ? n : 1) || !dev || !host) return SOLVER_INVALID_VALUE;
	*dev = ws_potrf(n, elem(dt)), *host = 0;
	return SOLVER_SUCCESS;
}

EXPORT int cusolverDnXpotrf(struct fake_solver *h, struct fake_sparams *p, int uplo, int64_t n, int dt, void *a, int64_t lda, int ct,
	void *dev, size_t dev_size, void *host, size_t host_size, int *info) {
	FAULT("cusolverDnXpotrf");
	CHECK(usable(h, p, 1));
	CHECK(ctypes(dt, ct));
	if ((uplo != 0 && uplo != 1) || n < 0 || lda < (n > 1 ? n : 1) || !info) return SOLVER_INVALID_VALUE;
	size_t es = elem(dt);
	CHECK(workspace(dev, dev_size, ws_potrf(n, es), host, host_size, 0));
	CHECK(mat_ok(a, n, n, lda, es));
	if (!mem_ok(info, 4)) return SOLVER_EXECUTION_FAILED;
	return queue(h, (struct solver_op){.kind = S_POTRF, .dbl = dt == T_F64 || dt == T_C64, .cplx = dt == T_C32 || dt == T_C64, .n = n, .lda = lda, .upper = uplo, .a = a, .info = info});
}

EXPORT int cusolverDnXpotrs(struct fake_solver *h, struct fake_sparams *p, int uplo, int64_t n, int64_t nrhs, int dta, const void *a, int64_t lda,
	int dtb, void *b, int64_t ldb, int *info) {
	FAULT("cusolverDnXpotrs");
	CHECK(usable(h, p, 1));
	CHECK(ctypes(dta, dtb));
	if ((uplo != 0 && uplo != 1) || n < 0 || nrhs < 0 || lda < (n > 1 ? n : 1) || ldb < (n > 1 ? n : 1) || !info) return SOLVER_INVALID_VALUE;
	size_t es = elem(dta);
	CHECK(mat_ok(a, n, n, lda, es));
	CHECK(mat_ok(b, n, nrhs, ldb, es));
	if (!mem_ok(info, 4)) return SOLVER_EXECUTION_FAILED;
	return queue(h, (struct solver_op){.kind = S_POTRS, .dbl = dta == T_F64 || dta == T_C64, .cplx = dta == T_C32 || dta == T_C64, .n = n, .k = nrhs, .lda = lda, .ldb = ldb, .upper = uplo, .a = (void *)a, .b = b, .info = info});
}

EXPORT int cusolverDnXgeqrf_bufferSize(struct fake_solver *h, struct fake_sparams *p, int64_t m, int64_t n, int dt, const void *a, int64_t lda, int dtt, const void *tau, int ct,
	size_t *dev, size_t *host) {
	FAULT("cusolverDnXgeqrf_bufferSize");
	CHECK(usable(h, p, 1));
	CHECK(ctypes(dt, ct));
	CHECK(ctypes(dtt, ct));
	if (m < 0 || n < 0 || lda < (m > 1 ? m : 1) || !dev || !host) return SOLVER_INVALID_VALUE;
	*dev = ws_geqrf(n, elem(dt)), *host = 0;
	return SOLVER_SUCCESS;
}

EXPORT int cusolverDnXgeqrf(struct fake_solver *h, struct fake_sparams *p, int64_t m, int64_t n, int dt, void *a, int64_t lda, int dtt, void *tau, int ct,
	void *dev, size_t dev_size, void *host, size_t host_size, int *info) {
	FAULT("cusolverDnXgeqrf");
	CHECK(usable(h, p, 1));
	CHECK(ctypes(dt, ct));
	CHECK(ctypes(dtt, ct));
	if (m < 0 || n < 0 || lda < (m > 1 ? m : 1) || !info) return SOLVER_INVALID_VALUE;
	size_t es = elem(dt);
	CHECK(workspace(dev, dev_size, ws_geqrf(n, es), host, host_size, 0));
	CHECK(mat_ok(a, m, n, lda, es));
	if (!mem_ok(info, 4) || !mem_ok(tau, (size_t)(m < n ? m : n) * es)) return SOLVER_EXECUTION_FAILED;
	return queue(h, (struct solver_op){.kind = S_GEQRF, .dbl = is_dbl(dt), .cplx = is_cplx(dt), .m = m, .n = n, .lda = lda, .a = a, .tau = tau, .info = info});
}

// svd_args checks gesvd's arguments (cuSOLVER's gesvd takes m >= n only).
static int svd_args(signed char jobu, signed char jobvt, int64_t m, int64_t n, int64_t lda, int64_t ldu, int64_t ldvt) {
	int ju = jobu == 'A' || jobu == 'S' || jobu == 'N', jv = jobvt == 'A' || jobvt == 'S' || jobvt == 'N';
	if (!ju || !jv || m < n || n < 0 || lda < (m > 1 ? m : 1)) return SOLVER_INVALID_VALUE;
	if (jobu != 'N' && ldu < (m > 1 ? m : 1)) return SOLVER_INVALID_VALUE;
	int64_t vrows = jobvt == 'A' ? n : n; // min(m, n) is n here
	if (jobvt != 'N' && ldvt < (vrows > 1 ? vrows : 1)) return SOLVER_INVALID_VALUE;
	return SOLVER_SUCCESS;
}

EXPORT int cusolverDnXgesvd_bufferSize(struct fake_solver *h, struct fake_sparams *p, signed char jobu, signed char jobvt, int64_t m, int64_t n, int dta, const void *a, int64_t lda,
	int dts, const void *s, int dtu, const void *u, int64_t ldu, int dtv, const void *vt, int64_t ldvt, int ct, size_t *dev, size_t *host) {
	FAULT("cusolverDnXgesvd_bufferSize");
	CHECK(usable(h, p, 1));
	CHECK(ctypes(dta, ct));
	CHECK(rtypes(dts, ct));
	CHECK(ctypes(dtu, ct));
	CHECK(ctypes(dtv, ct));
	CHECK(svd_args(jobu, jobvt, m, n, lda, ldu, ldvt));
	if (!dev || !host) return SOLVER_INVALID_VALUE;
	*dev = ws_gesvd(m, n, elem(dta)), *host = host_ws;
	return SOLVER_SUCCESS;
}

EXPORT int cusolverDnXgesvd(struct fake_solver *h, struct fake_sparams *p, signed char jobu, signed char jobvt, int64_t m, int64_t n, int dta, void *a, int64_t lda,
	int dts, void *s, int dtu, void *u, int64_t ldu, int dtv, void *vt, int64_t ldvt, int ct,
	void *dev, size_t dev_size, void *host, size_t host_size, int *info) {
	FAULT("cusolverDnXgesvd");
	CHECK(usable(h, p, 1));
	CHECK(ctypes(dta, ct));
	CHECK(rtypes(dts, ct));
	CHECK(ctypes(dtu, ct));
	CHECK(ctypes(dtv, ct));
	CHECK(svd_args(jobu, jobvt, m, n, lda, ldu, ldvt));
	if (!info) return SOLVER_INVALID_VALUE;
	size_t es = elem(dta);
	CHECK(workspace(dev, dev_size, ws_gesvd(m, n, es), host, host_size, host_ws));
	CHECK(mat_ok(a, m, n, lda, es));
	if (jobu != 'N') CHECK(mat_ok(u, m, jobu == 'A' ? m : n, ldu, es));
	if (jobvt != 'N') CHECK(mat_ok(vt, n, n, ldvt, es));
	if (!mem_ok(info, 4) || !mem_ok(s, (size_t)n * elem(dts))) return SOLVER_EXECUTION_FAILED;
	return queue(h, (struct solver_op){.kind = S_GESVD, .dbl = is_dbl(dta), .cplx = is_cplx(dta), .m = m, .n = n, .lda = lda, .ldu = ldu, .ldv = ldvt, .jobu = jobu, .jobvt = jobvt,
		.a = a, .s = s, .u = u, .v = vt, .info = info});
}

EXPORT int cusolverDnXsyevd_bufferSize(struct fake_solver *h, struct fake_sparams *p, int jobz, int uplo, int64_t n, int dta, const void *a, int64_t lda, int dtw, const void *w, int ct,
	size_t *dev, size_t *host) {
	FAULT("cusolverDnXsyevd_bufferSize");
	CHECK(usable(h, p, 1));
	CHECK(ctypes(dta, ct));
	CHECK(rtypes(dtw, ct));
	if ((jobz != 0 && jobz != 1) || (uplo != 0 && uplo != 1) || n < 0 || lda < (n > 1 ? n : 1) || !dev || !host) return SOLVER_INVALID_VALUE;
	*dev = ws_syevd(n, elem(dta)), *host = host_ws;
	return SOLVER_SUCCESS;
}

EXPORT int cusolverDnXsyevd(struct fake_solver *h, struct fake_sparams *p, int jobz, int uplo, int64_t n, int dta, void *a, int64_t lda, int dtw, void *w, int ct,
	void *dev, size_t dev_size, void *host, size_t host_size, int *info) {
	FAULT("cusolverDnXsyevd");
	CHECK(usable(h, p, 1));
	CHECK(ctypes(dta, ct));
	CHECK(rtypes(dtw, ct));
	if ((jobz != 0 && jobz != 1) || (uplo != 0 && uplo != 1) || n < 0 || lda < (n > 1 ? n : 1) || !info) return SOLVER_INVALID_VALUE;
	size_t es = elem(dta);
	CHECK(workspace(dev, dev_size, ws_syevd(n, es), host, host_size, host_ws));
	CHECK(mat_ok(a, n, n, lda, es));
	if (!mem_ok(info, 4) || !mem_ok(w, (size_t)n * elem(dtw))) return SOLVER_EXECUTION_FAILED;
	return queue(h, (struct solver_op){.kind = S_SYEVD, .dbl = is_dbl(dta), .cplx = is_cplx(dta), .n = n, .lda = lda, .upper = uplo, .vectors = jobz, .a = a, .s = w, .info = info});
}

// ---- the legacy API: lwork in elements ----------------------------------------

// Each legacy call's S, D, C and Z entry points (and their
// _bufferSize) are one macro's four uses, beside the function they share:
// X or NAME the name's type letter (and the routine's LAPACK name: the
// complex ones' ungqr, unmqr and heevj), T the element (void for the
// complex ones, as cuComplex is opaque here), R the real outputs', t the
// type tag the shared function checks and computes by.

static int lw_potri(int n) { return n + 4; }
static int lw_orgqr(int n) { return n + 8; }
static int lw_ormqr(int m, int n) { return (m > n ? m : n) + 8; }
static int lw_jacobi(int m, int n, int batch) { return (m + n) * batch + 8; }

static int potri_bs(struct fake_solver *h, int uplo, int n, const void *a, int lda, int *lwork) {
	(void)a;
	CHECK(usable(h, NULL, 0));
	if ((uplo != 0 && uplo != 1) || n < 0 || lda < (n > 1 ? n : 1) || !lwork) return SOLVER_INVALID_VALUE;
	*lwork = lw_potri(n);
	return SOLVER_SUCCESS;
}

// potri's t: T_F32, T_F64, T_C32 or T_C64.
static int potri(struct fake_solver *h, int t, int uplo, int n, void *a, int lda, void *work, int lwork, int *info) {
	CHECK(usable(h, NULL, 0));
	size_t es = elem(t);
	int dbl = t == T_F64 || t == T_C64, cplx = t == T_C32 || t == T_C64;
	if ((uplo != 0 && uplo != 1) || n < 0 || lda < (n > 1 ? n : 1) || lwork < lw_potri(n) || !info) return SOLVER_INVALID_VALUE;
	CHECK(mat_ok(a, n, n, lda, es));
	if (!mem_ok(work, (size_t)lwork * es) || !mem_ok(info, 4)) return SOLVER_EXECUTION_FAILED;
	return queue(h, (struct solver_op){.kind = S_POTRI, .dbl = dbl, .cplx = cplx, .n = n, .lda = lda, .upper = uplo, .a = a, .info = info});
}
#define POTRI(X, T, t) \
	EXPORT int cusolverDn##X##potri_bufferSize(struct fake_solver *h, int uplo, int n, T *a, int lda, int *lwork) { \
		FAULT("cusolverDn" #X "potri_bufferSize"); \
		return potri_bs(h, uplo, n, a, lda, lwork); \
	} \
	EXPORT int cusolverDn##X##potri(struct fake_solver *h, int uplo, int n, T *a, int lda, T *work, int lwork, int *info) { \
		FAULT("cusolverDn" #X "potri"); \
		return potri(h, t, uplo, n, a, lda, work, lwork, info); \
	}
POTRI(S, float, T_F32)
POTRI(D, double, T_F64)
POTRI(C, void, T_C32)
POTRI(Z, void, T_C64)

static int orgqr_args(int m, int n, int k, int lda) {
	return m < 0 || n < 0 || n > m || k < 0 || k > n || lda < (m > 1 ? m : 1) ? SOLVER_INVALID_VALUE : SOLVER_SUCCESS;
}
static int orgqr_bs(struct fake_solver *h, int m, int n, int k, int lda, int *lwork) {
	CHECK(usable(h, NULL, 0));
	CHECK(orgqr_args(m, n, k, lda));
	if (!lwork) return SOLVER_INVALID_VALUE;
	*lwork = lw_orgqr(n);
	return SOLVER_SUCCESS;
}
static int orgqr(struct fake_solver *h, int t, int m, int n, int k, void *a, int lda, const void *tau, void *work, int lwork, int *info) {
	CHECK(usable(h, NULL, 0));
	CHECK(orgqr_args(m, n, k, lda));
	size_t es = elem(t);
	int dbl = is_dbl(t);
	if (lwork < lw_orgqr(n) || !info) return SOLVER_INVALID_VALUE;
	CHECK(mat_ok(a, m, n, lda, es));
	if (!mem_ok(tau, (size_t)k * es) || !mem_ok(work, (size_t)lwork * es) || !mem_ok(info, 4)) return SOLVER_EXECUTION_FAILED;
	return queue(h, (struct solver_op){.kind = S_ORGQR, .dbl = dbl, .cplx = is_cplx(t), .m = m, .n = n, .k = k, .lda = lda, .a = a, .tau = (void *)tau, .info = info});
}
#define ORGQR(NAME, T, t) \
	EXPORT int cusolverDn##NAME##_bufferSize(struct fake_solver *h, int m, int n, int k, const T *a, int lda, const T *tau, int *lwork) { \
		FAULT("cusolverDn" #NAME "_bufferSize"); \
		return orgqr_bs(h, m, n, k, lda, lwork); \
	} \
	EXPORT int cusolverDn##NAME(struct fake_solver *h, int m, int n, int k, T *a, int lda, const T *tau, T *work, int lwork, int *info) { \
		FAULT("cusolverDn" #NAME); \
		return orgqr(h, t, m, n, k, a, lda, tau, work, lwork, info); \
	}
ORGQR(Sorgqr, float, T_F32)
ORGQR(Dorgqr, double, T_F64)
ORGQR(Cungqr, void, T_C32)
ORGQR(Zungqr, void, T_C64)

// ormqr_args: trans N or T for the real ormqr, N or C (2) for the complex
// unmqr.
static int ormqr_args(int cplx, int side, int trans, int m, int n, int k, int lda, int ldc) {
	int r = side ? n : m;
	if ((side != 0 && side != 1) || (trans != 0 && trans != (cplx ? 2 : 1)) || m < 0 || n < 0 || k < 0 || k > r) return SOLVER_INVALID_VALUE;
	if (lda < (r > 1 ? r : 1) || ldc < (m > 1 ? m : 1)) return SOLVER_INVALID_VALUE;
	return SOLVER_SUCCESS;
}
static int ormqr_bs(struct fake_solver *h, int cplx, int side, int trans, int m, int n, int k, int lda, int ldc, int *lwork) {
	CHECK(usable(h, NULL, 0));
	CHECK(ormqr_args(cplx, side, trans, m, n, k, lda, ldc));
	if (!lwork) return SOLVER_INVALID_VALUE;
	*lwork = lw_ormqr(m, n);
	return SOLVER_SUCCESS;
}
static int ormqr(struct fake_solver *h, int t, int side, int trans, int m, int n, int k, const void *a, int lda, const void *tau, void *c, int ldc, void *work, int lwork, int *info) {
	CHECK(usable(h, NULL, 0));
	CHECK(ormqr_args(is_cplx(t), side, trans, m, n, k, lda, ldc));
	size_t es = elem(t);
	int dbl = is_dbl(t);
	if (lwork < lw_ormqr(m, n) || !info) return SOLVER_INVALID_VALUE;
	CHECK(mat_ok(a, side ? n : m, k, lda, es));
	CHECK(mat_ok(c, m, n, ldc, es));
	if (!mem_ok(tau, (size_t)k * es) || !mem_ok(work, (size_t)lwork * es) || !mem_ok(info, 4)) return SOLVER_EXECUTION_FAILED;
	return queue(h, (struct solver_op){.kind = S_ORMQR, .dbl = dbl, .cplx = is_cplx(t), .m = m, .n = n, .k = k, .lda = lda, .ldb = ldc, .side = side, .trans = trans,
		.a = (void *)a, .tau = (void *)tau, .b = c, .info = info});
}
#define ORMQR(NAME, T, t) \
	EXPORT int cusolverDn##NAME##_bufferSize(struct fake_solver *h, int side, int trans, int m, int n, int k, const T *a, int lda, const T *tau, const T *c, int ldc, \
		int *lwork) { \
		FAULT("cusolverDn" #NAME "_bufferSize"); \
		return ormqr_bs(h, is_cplx(t), side, trans, m, n, k, lda, ldc, lwork); \
	} \
	EXPORT int cusolverDn##NAME(struct fake_solver *h, int side, int trans, int m, int n, int k, const T *a, int lda, const T *tau, T *c, int ldc, T *work, int lwork, \
		int *info) { \
		FAULT("cusolverDn" #NAME); \
		return ormqr(h, t, side, trans, m, n, k, a, lda, tau, c, ldc, work, lwork, info); \
	}
ORMQR(Sormqr, float, T_F32)
ORMQR(Dormqr, double, T_F64)
ORMQR(Cunmqr, void, T_C32)
ORMQR(Zunmqr, void, T_C64)

static int potrf_batched(struct fake_solver *h, int t, int uplo, int n, void *arr, int lda, int *info, int batch) {
	CHECK(usable(h, NULL, 0));
	if ((uplo != 0 && uplo != 1) || n < 0 || lda < (n > 1 ? n : 1) || batch < 0 || !info) return SOLVER_INVALID_VALUE;
	if (batch == 0) return SOLVER_SUCCESS;
	if (!mem_ok(arr, (size_t)batch * sizeof(void *)) || !mem_ok(info, (size_t)batch * 4)) return SOLVER_EXECUTION_FAILED;
	return queue(h, (struct solver_op){.kind = S_POTRFB, .dbl = is_dbl(t), .cplx = is_cplx(t), .n = n, .lda = lda, .upper = uplo, .a = arr, .info = info, .batch = batch});
}
#define POTRFB(X, T, t) \
	EXPORT int cusolverDn##X##potrfBatched(struct fake_solver *h, int uplo, int n, T **arr, int lda, int *info, int batch) { \
		FAULT("cusolverDn" #X "potrfBatched"); \
		return potrf_batched(h, t, uplo, n, arr, lda, info, batch); \
	}
POTRFB(S, float, T_F32)
POTRFB(D, double, T_F64)
POTRFB(C, void, T_C32)
POTRFB(Z, void, T_C64)

// The least-squares solvers: m >= n, column-major; the fake's workspace
// in bytes; iter (host) is 0, as for a solve without refinement.
static size_t lw_gels(int m, int n, int nrhs, size_t es) { return (size_t)(m + n) * (size_t)(nrhs + 1) * es + 64; }
static int gels_args(int m, int n, int nrhs, int lda, int ldb, int ldx) {
	if (m < 0 || n < 0 || nrhs < 0 || m < n || lda < (m > 1 ? m : 1) || ldb < (m > 1 ? m : 1) || ldx < (n > 1 ? n : 1)) return SOLVER_INVALID_VALUE;
	return SOLVER_SUCCESS;
}
static int gels_bs(struct fake_solver *h, int t, int m, int n, int nrhs, int lda, int ldb, int ldx, size_t *lwork) {
	CHECK(usable(h, NULL, 0));
	CHECK(gels_args(m, n, nrhs, lda, ldb, ldx));
	if (!lwork) return SOLVER_INVALID_VALUE;
	*lwork = lw_gels(m, n, nrhs, elem(t));
	return SOLVER_SUCCESS;
}
static int gels(struct fake_solver *h, int t, int m, int n, int nrhs, void *a, int lda, void *b, int ldb, void *x, int ldx, void *work, size_t lwork, int *iter, int *info) {
	CHECK(usable(h, NULL, 0));
	CHECK(gels_args(m, n, nrhs, lda, ldb, ldx));
	size_t es = elem(t);
	if (!iter || !info) return SOLVER_INVALID_VALUE;
	if (lwork < lw_gels(m, n, nrhs, es)) return SOLVER_INVALID_WORKSPACE;
	CHECK(mat_ok(a, m, n, lda, es));
	CHECK(mat_ok(b, m, nrhs, ldb, es));
	CHECK(mat_ok(x, n, nrhs, ldx, es));
	if (!mem_ok(work, lwork) || !mem_ok(info, 4)) return SOLVER_EXECUTION_FAILED;
	*iter = 0;
	return queue(h, (struct solver_op){.kind = S_GELS, .dbl = is_dbl(t), .cplx = is_cplx(t), .m = m, .n = n, .k = nrhs, .lda = lda, .ldb = ldb, .ldx = ldx, .a = a, .b = b, .x = x, .info = info});
}
#define GELS(XX, T, t) \
	EXPORT int cusolverDn##XX##gels_bufferSize(struct fake_solver *h, int m, int n, int nrhs, T *a, int lda, T *b, int ldb, T *x, int ldx, void *work, size_t *lwork) { \
		FAULT("cusolverDn" #XX "gels_bufferSize"); \
		return gels_bs(h, t, m, n, nrhs, lda, ldb, ldx, lwork); \
	} \
	EXPORT int cusolverDn##XX##gels(struct fake_solver *h, int m, int n, int nrhs, T *a, int lda, T *b, int ldb, T *x, int ldx, void *work, size_t lwork, int *iter, \
		int *info) { \
		FAULT("cusolverDn" #XX "gels"); \
		return gels(h, t, m, n, nrhs, a, lda, b, ldb, x, ldx, work, lwork, iter, info); \
	}
GELS(SS, float, T_F32)
GELS(DD, double, T_F64)
GELS(CC, void, T_C32)
GELS(ZZ, void, T_C64)

// The Jacobi batches: matrices of at most 32×32, packed one after another
// (lda×n elements apart).
static int jinfo_ok(void *p, int magic) { return p && *(int *)p == magic; }

static int gesvdj_args(int jobz, int m, int n, int lda, int ldu, int ldv, int batch) {
	if ((jobz != 0 && jobz != 1) || m < 1 || n < 1 || m > 32 || n > 32 || batch < 0) return SOLVER_INVALID_VALUE;
	if (lda < m || (jobz && (ldu < m || ldv < n))) return SOLVER_INVALID_VALUE;
	return SOLVER_SUCCESS;
}
static int gesvdj_bs(struct fake_solver *h, int jobz, int m, int n, int lda, int ldu, int ldv, int *lwork, void *info, int batch) {
	CHECK(usable(h, NULL, 0));
	if (!jinfo_ok(info, JINFO_MAGIC) || !lwork) return SOLVER_INVALID_VALUE;
	CHECK(gesvdj_args(jobz, m, n, lda, ldu, ldv, batch));
	*lwork = lw_jacobi(m, n, batch);
	return SOLVER_SUCCESS;
}
static int gesvdj(struct fake_solver *h, int t, int jobz, int m, int n, void *a, int lda, void *s, void *u, int ldu, void *v, int ldv, void *work, int lwork, int *info, void *params, int batch) {
	CHECK(usable(h, NULL, 0));
	if (!jinfo_ok(params, JINFO_MAGIC) || !info) return SOLVER_INVALID_VALUE;
	CHECK(gesvdj_args(jobz, m, n, lda, ldu, ldv, batch));
	if (lwork < lw_jacobi(m, n, batch)) return SOLVER_INVALID_VALUE;
	if (batch == 0) return SOLVER_SUCCESS;
	size_t es = elem(t), rs = elem(real_of(t));
	int k = m < n ? m : n;
	if (!mem_ok(a, (size_t)lda * n * batch * es) || !mem_ok(s, (size_t)k * batch * rs) || !mem_ok(work, (size_t)lwork * es) || !mem_ok(info, (size_t)batch * 4))
		return SOLVER_EXECUTION_FAILED;
	if (jobz && (!mem_ok(u, (size_t)ldu * m * batch * es) || !mem_ok(v, (size_t)ldv * n * batch * es))) return SOLVER_EXECUTION_FAILED;
	return queue(h, (struct solver_op){.kind = S_GESVDJB, .dbl = is_dbl(t), .cplx = is_cplx(t), .m = m, .n = n, .lda = lda, .ldu = ldu, .ldv = ldv, .vectors = jobz, .a = a, .s = s, .u = u, .v = v,
		.info = info, .batch = batch});
}
#define GESVDJ(X, T, R, t) \
	EXPORT int cusolverDn##X##gesvdjBatched_bufferSize(struct fake_solver *h, int jobz, int m, int n, const T *a, int lda, const R *s, const T *u, int ldu, const T *v, \
		int ldv, int *lwork, void *params, int batch) { \
		FAULT("cusolverDn" #X "gesvdjBatched_bufferSize"); \
		return gesvdj_bs(h, jobz, m, n, lda, ldu, ldv, lwork, params, batch); \
	} \
	EXPORT int cusolverDn##X##gesvdjBatched(struct fake_solver *h, int jobz, int m, int n, T *a, int lda, R *s, T *u, int ldu, T *v, int ldv, T *work, int lwork, \
		int *info, void *params, int batch) { \
		FAULT("cusolverDn" #X "gesvdjBatched"); \
		return gesvdj(h, t, jobz, m, n, a, lda, s, u, ldu, v, ldv, work, lwork, info, params, batch); \
	}
GESVDJ(S, float, float, T_F32)
GESVDJ(D, double, double, T_F64)
GESVDJ(C, void, float, T_C32)
GESVDJ(Z, void, double, T_C64)

static int syevj_args(int jobz, int uplo, int n, int lda, int batch) {
	if ((jobz != 0 && jobz != 1) || (uplo != 0 && uplo != 1) || n < 1 || n > 32 || lda < n || batch < 0) return SOLVER_INVALID_VALUE;
	return SOLVER_SUCCESS;
}
static int syevj_bs(struct fake_solver *h, int jobz, int uplo, int n, int lda, int *lwork, void *params, int batch) {
	CHECK(usable(h, NULL, 0));
	if (!jinfo_ok(params, JINFO_MAGIC + 1) || !lwork) return SOLVER_INVALID_VALUE;
	CHECK(syevj_args(jobz, uplo, n, lda, batch));
	*lwork = lw_jacobi(n, n, batch);
	return SOLVER_SUCCESS;
}
static int syevj(struct fake_solver *h, int t, int jobz, int uplo, int n, void *a, int lda, void *w, void *work, int lwork, int *info, void *params, int batch) {
	CHECK(usable(h, NULL, 0));
	if (!jinfo_ok(params, JINFO_MAGIC + 1) || !info) return SOLVER_INVALID_VALUE;
	CHECK(syevj_args(jobz, uplo, n, lda, batch));
	if (lwork < lw_jacobi(n, n, batch)) return SOLVER_INVALID_VALUE;
	if (batch == 0) return SOLVER_SUCCESS;
	size_t es = elem(t), rs = elem(real_of(t));
	if (!mem_ok(a, (size_t)lda * n * batch * es) || !mem_ok(w, (size_t)n * batch * rs) || !mem_ok(work, (size_t)lwork * es) || !mem_ok(info, (size_t)batch * 4))
		return SOLVER_EXECUTION_FAILED;
	return queue(h, (struct solver_op){.kind = S_SYEVJB, .dbl = is_dbl(t), .cplx = is_cplx(t), .n = n, .lda = lda, .upper = uplo, .vectors = jobz, .a = a, .s = w, .info = info, .batch = batch});
}
#define SYEVJ(NAME, T, R, t) \
	EXPORT int cusolverDn##NAME##Batched_bufferSize(struct fake_solver *h, int jobz, int uplo, int n, const T *a, int lda, const R *w, int *lwork, void *params, \
		int batch) { \
		FAULT("cusolverDn" #NAME "Batched_bufferSize"); \
		return syevj_bs(h, jobz, uplo, n, lda, lwork, params, batch); \
	} \
	EXPORT int cusolverDn##NAME##Batched(struct fake_solver *h, int jobz, int uplo, int n, T *a, int lda, R *w, T *work, int lwork, int *info, void *params, int batch) { \
		FAULT("cusolverDn" #NAME "Batched"); \
		return syevj(h, t, jobz, uplo, n, a, lda, w, work, lwork, info, params, batch); \
	}
SYEVJ(Ssyevj, float, float, T_F32)
SYEVJ(Dsyevj, double, double, T_F64)
SYEVJ(Cheevj, void, float, T_C32)
SYEVJ(Zheevj, void, double, T_C64)
