// The fake cuSOLVER's LU and Cholesky and its queued work, for one kind
// of element (included by solver.c twice: for the reals, then for the
// complex numbers). The includer defines
//
//	E        the element, double or double complex
//	F(name)  the name of this kind's form of name: name, or z##name
//	CONJ(x)  x's conjugate (x itself for the reals)
//	RE(x)    x's real part
//	ABS(x)   x's absolute value
//	CPLX     1 for the complex numbers, else 0
//
// and its load, store, qr, reflect_left, reflect_right, vec, svd and eig
// (F's names) beforehand; this file undefines them at its end. Cholesky
// is of a Hermitian (real: symmetric) matrix, A = L·Lᴴ or Uᴴ·U; a
// transposed solve's trans 2 is the conjugate transpose.

// lu factors the m×n a in place with partial pivoting (ipiv 1-based);
// returns info: 0, or the first j with U(j,j) exactly zero.
static int F(lu)(E *a, int64_t m, int64_t n, int64_t *ipiv) {
	int info = 0;
	int64_t k = m < n ? m : n;
	for (int64_t j = 0; j < k; j++) {
		int64_t p = j;
		for (int64_t i = j + 1; i < m; i++)
			if (ABS(AT(a, m, i, j)) > ABS(AT(a, m, p, j))) p = i;
		ipiv[j] = p + 1;
		if (p != j)
			for (int64_t c = 0; c < n; c++) {
				E t = AT(a, m, j, c);
				AT(a, m, j, c) = AT(a, m, p, c), AT(a, m, p, c) = t;
			}
		E d = AT(a, m, j, j);
		if (d == 0) {
			if (!info) info = (int)(j + 1);
			continue;
		}
		for (int64_t i = j + 1; i < m; i++) AT(a, m, i, j) /= d;
		for (int64_t c = j + 1; c < n; c++)
			for (int64_t i = j + 1; i < m; i++) AT(a, m, i, c) -= AT(a, m, i, j) * AT(a, m, j, c);
	}
	return info;
}

// lu_solve solves op(A) X = B in place (b n×nrhs) from lu's factors.
static void F(lu_solve)(const E *a, int64_t n, const int64_t *ipiv, int trans, E *b, int64_t nrhs) {
	for (int64_t r = 0; r < nrhs; r++) {
		E *x = b + r * n;
		if (!trans) {
			for (int64_t i = 0; i < n; i++) {
				int64_t p = ipiv[i] - 1;
				E t = x[i];
				x[i] = x[p], x[p] = t;
			}
			for (int64_t i = 0; i < n; i++)
				for (int64_t k = 0; k < i; k++) x[i] -= AT(a, n, i, k) * x[k];
			for (int64_t i = n - 1; i >= 0; i--) {
				for (int64_t k = i + 1; k < n; k++) x[i] -= AT(a, n, i, k) * x[k];
				x[i] /= AT(a, n, i, i);
			}
			continue;
		}
		// op(A) = op(U)·op(L)·P, op the transpose (or its conjugate):
		// solve op(U) y = b, op(L) z = y, then undo the swaps.
#define OP(z) (trans == 2 ? CONJ(z) : (z))
		for (int64_t i = 0; i < n; i++) {
			for (int64_t k = 0; k < i; k++) x[i] -= OP(AT(a, n, k, i)) * x[k];
			x[i] /= OP(AT(a, n, i, i));
		}
		for (int64_t i = n - 1; i >= 0; i--)
			for (int64_t k = i + 1; k < n; k++) x[i] -= OP(AT(a, n, k, i)) * x[k];
#undef OP
		for (int64_t i = n - 1; i >= 0; i--) {
			int64_t p = ipiv[i] - 1;
			E t = x[i];
			x[i] = x[p], x[p] = t;
		}
	}
}

// lfac returns L(i,j) of the factor chol left in a's uplo triangle
// (L = Uᴴ for upper).
static E F(lfac)(const E *a, int64_t n, int upper, int64_t i, int64_t j) {
	return upper ? CONJ(AT(a, n, j, i)) : AT(a, n, i, j);
}

// chol factors the Hermitian n×n a (its uplo triangle: 0 lower, 1 upper)
// in place: A = L Lᴴ or Uᴴ U in that triangle; the other is untouched.
// Returns info: 0, or the order of the leading minor that is not positive
// definite (the factoring stops there).
static int F(chol)(E *a, int64_t n, int upper) {
	for (int64_t j = 0; j < n; j++) {
		// L(j,j) = sqrt(A(j,j) - sum |L(j,k)|²); for upper, U(k,j) = conj(L(j,k)).
		double d = RE(AT(a, n, j, j));
		for (int64_t k = 0; k < j; k++) {
			E l = F(lfac)(a, n, upper, j, k);
			d -= RE(l * CONJ(l));
		}
		if (!(d > 0)) return (int)(j + 1);
		d = sqrt(d);
		AT(a, n, j, j) = d;
		for (int64_t i = j + 1; i < n; i++) {
			// L(i,j) = (A(i,j) - sum L(i,k)·conj(L(j,k))) / L(j,j)
			E s = upper ? CONJ(AT(a, n, j, i)) : AT(a, n, i, j);
			for (int64_t k = 0; k < j; k++) s -= F(lfac)(a, n, upper, i, k) * CONJ(F(lfac)(a, n, upper, j, k));
			s /= d;
			if (upper) AT(a, n, j, i) = CONJ(s);
			else AT(a, n, i, j) = s;
		}
	}
	return 0;
}

// chol_solve solves A X = B (b n×nrhs) from chol's factor.
static void F(chol_solve)(const E *a, int64_t n, int upper, E *b, int64_t nrhs) {
	for (int64_t r = 0; r < nrhs; r++) {
		E *x = b + r * n;
		for (int64_t i = 0; i < n; i++) {
			for (int64_t k = 0; k < i; k++) x[i] -= F(lfac)(a, n, upper, i, k) * x[k];
			x[i] /= F(lfac)(a, n, upper, i, i);
		}
		for (int64_t i = n - 1; i >= 0; i--) {
			for (int64_t k = i + 1; k < n; k++) x[i] -= CONJ(F(lfac)(a, n, upper, k, i)) * x[k];
			x[i] /= CONJ(F(lfac)(a, n, upper, i, i));
		}
	}
}

// chol_inverse writes A⁻¹ into the uplo triangle of a, which holds chol's
// factor; returns info: the first zero diagonal element of the factor.
static int F(chol_inverse)(E *a, int64_t n, int upper) {
	for (int64_t i = 0; i < n; i++)
		if (F(lfac)(a, n, upper, i, i) == 0) return (int)(i + 1);
	E *inv = calloc((size_t)(n * n) + 1, sizeof *inv);
	for (int64_t j = 0; j < n; j++) AT(inv, n, j, j) = 1;
	F(chol_solve)(a, n, upper, inv, n);
	for (int64_t j = 0; j < n; j++)
		for (int64_t i = 0; i < n; i++)
			if (upper ? i <= j : i >= j) AT(a, n, i, j) = AT(inv, n, i, j);
	free(inv);
	return 0;
}

// perform runs one queued call on the worker.
static void F(perform)(struct solver_op *o) {
	int dbl = o->dbl;
	size_t es = sizeof(E) / (dbl ? 1 : 2), rs = dbl ? 8 : 4; // the elements' and the real outputs' sizes
	switch (o->kind) {
	case S_GELS: {
		// X = R⁻¹ (Qᴴ B)(1:n), A left as it was; Qᴴ applies H1ᴴ first.
		E *a = F(load)(o->a, dbl, o->m, o->n, o->lda), *b = F(load)(o->b, dbl, o->m, o->k, o->ldb);
		E *tau = calloc((size_t)o->n + 1, sizeof *tau);
		F(qr)(a, o->m, o->n, tau);
		for (int64_t i = 0; i < o->n; i++) {
			E *v = F(vec)(a, o->m, i);
			F(reflect_left)(b, o->m, 0, o->k, i, v, o->m - i, CONJ(tau[i]));
			free(v);
		}
		// A zero on R's diagonal (A without full column rank): the real
		// cuSOLVER (12, on an H100) writes -30 in info, the negative of
		// CUSOLVER_STATUS_IRS_MATRIX_SINGULAR, as its IRS solvers do, not
		// the column.
		int info = 0;
		for (int64_t i = 0; i < o->n && !info; i++)
			if (AT(a, o->m, i, i) == 0) info = -30;
		E *x = calloc((size_t)(o->n * o->k) + 1, sizeof *x);
		for (int64_t r = 0; r < o->k && !info; r++)
			for (int64_t i = o->n - 1; i >= 0; i--) {
				E t = AT(b, o->m, i, r);
				for (int64_t c = i + 1; c < o->n; c++) t -= AT(a, o->m, i, c) * AT(x, o->n, c, r);
				AT(x, o->n, i, r) = t / AT(a, o->m, i, i);
			}
		if (!info) F(store)(o->x, dbl, o->n, o->k, o->ldx, x);
		put_info(o->info, 0, info);
		free(a), free(b), free(tau), free(x);
		break;
	}
	case S_GETRF: {
		E *a = F(load)(o->a, dbl, o->m, o->n, o->lda);
		int64_t k = o->m < o->n ? o->m : o->n;
		int64_t *piv = calloc((size_t)k + 1, sizeof *piv);
		int info = F(lu)(a, o->m, o->n, piv);
		F(store)(o->a, dbl, o->m, o->n, o->lda, a);
		if (o->ipiv) memcpy(o->ipiv, piv, (size_t)k * sizeof *piv);
		put_info(o->info, 0, info);
		free(a), free(piv);
		break;
	}
	case S_GETRS:
	case S_POTRS: {
		// B ← A⁻¹·B from getrf's or potrf's factors.
		E *a = F(load)(o->a, dbl, o->n, o->n, o->lda), *b = F(load)(o->b, dbl, o->n, o->k, o->ldb);
		if (o->kind == S_GETRS) F(lu_solve)(a, o->n, o->ipiv, o->trans, b, o->k);
		else F(chol_solve)(a, o->n, o->upper, b, o->k);
		F(store)(o->b, dbl, o->n, o->k, o->ldb, b);
		put_info(o->info, 0, 0);
		free(a), free(b);
		break;
	}
	case S_POTRF:
	case S_POTRI: {
		// The factor, or the inverse from it, in a's uplo triangle.
		E *a = F(load)(o->a, dbl, o->n, o->n, o->lda);
		int info = o->kind == S_POTRF ? F(chol)(a, o->n, o->upper) : F(chol_inverse)(a, o->n, o->upper);
		F(store)(o->a, dbl, o->n, o->n, o->lda, a);
		put_info(o->info, 0, info);
		free(a);
		break;
	}
	case S_GEQRF: {
		E *a = F(load)(o->a, dbl, o->m, o->n, o->lda);
		int64_t k = o->m < o->n ? o->m : o->n;
		E *tau = calloc((size_t)k + 1, sizeof *tau);
		F(qr)(a, o->m, o->n, tau);
		F(store)(o->a, dbl, o->m, o->n, o->lda, a);
		F(store)(o->tau, dbl, k, 1, k, tau);
		put_info(o->info, 0, 0);
		free(a), free(tau);
		break;
	}
	case S_ORGQR:
	case S_ORMQR: {
		// Q = H1 ... Hk of order r (m on the left, n on the right) applied
		// to ormqr's C, or, for orgqr, to the m×n I from the left: Q's
		// first n columns; Hᴴ (conj(tau)) where Qᴴ is asked.
		int gen = o->kind == S_ORGQR;
		int64_t r = o->side ? o->n : o->m;
		E *a = F(load)(o->a, dbl, r, o->k, o->lda), *tau = F(load)(o->tau, dbl, o->k, 1, o->k);
		E *c = gen ? calloc((size_t)(o->m * o->n) + 1, sizeof *c) : F(load)(o->b, dbl, o->m, o->n, o->ldb);
		for (int64_t j = 0; gen && j < o->n; j++) AT(c, o->m, j, j) = 1;
		// Left: Q C applies Hk first, Qᴴ C H1 first; right: C Q H1 first, C Qᴴ Hk first.
		int forward = o->side ? !o->trans : o->trans;
		for (int64_t step = 0; step < o->k; step++) {
			int64_t i = forward ? step : o->k - 1 - step;
			E *v = F(vec)(a, r, i), t = o->trans ? CONJ(tau[i]) : tau[i];
			if (o->side) F(reflect_right)(c, o->m, i, v, r - i, t);
			else F(reflect_left)(c, o->m, 0, o->n, i, v, r - i, t);
			free(v);
		}
		if (gen) F(store)(o->a, dbl, o->m, o->n, o->lda, c);
		else F(store)(o->b, dbl, o->m, o->n, o->ldb, c);
		put_info(o->info, 0, 0);
		free(a), free(tau), free(c);
		break;
	}
	case S_GESVD: {
		// m >= n: A = U·S·Vᴴ, Vᴴ out.
		E *a = F(load)(o->a, dbl, o->m, o->n, o->lda);
		int64_t k = o->m < o->n ? o->m : o->n;
		double *s = calloc((size_t)k + 1, sizeof *s);
		E *u = calloc((size_t)(o->m * o->m) + 1, sizeof *u), *v = calloc((size_t)(o->n * o->n) + 1, sizeof *v);
		F(svd)(a, o->m, o->n, s, u, v);
		store_vec(o->s, dbl, k, s);
		if (o->jobu == 'A' || o->jobu == 'S') F(store)(o->u, dbl, o->m, o->jobu == 'A' ? o->m : k, o->ldu, u);
		if (o->jobvt == 'A' || o->jobvt == 'S') {
			int64_t rows = o->jobvt == 'A' ? o->n : k;
			E *vt = calloc((size_t)(rows * o->n) + 1, sizeof *vt);
			for (int64_t j = 0; j < o->n; j++)
				for (int64_t i = 0; i < rows; i++) AT(vt, rows, i, j) = CONJ(AT(v, o->n, j, i));
			F(store)(o->v, dbl, rows, o->n, o->ldv, vt);
			free(vt);
		}
		put_info(o->info, 0, 0);
		free(a), free(s), free(u), free(v);
		break;
	}
	case S_SYEVD: {
		E *a = F(load)(o->a, dbl, o->n, o->n, o->lda);
		double *w = calloc((size_t)o->n + 1, sizeof *w);
		E *v = calloc((size_t)(o->n * o->n) + 1, sizeof *v);
		F(eig)(a, o->n, o->upper, w, v);
		store_vec(o->s, dbl, o->n, w);
		if (o->vectors) F(store)(o->a, dbl, o->n, o->n, o->lda, v);
		put_info(o->info, 0, 0);
		free(a), free(w), free(v);
		break;
	}
	case S_GESVDJB: {
		// A = U·S·Vᴴ, V itself (not Vᴴ) out; a wide complex A through
		// Aᴴ = V·S·Uᴴ (the real svd takes any shape).
		int64_t m = o->m, n = o->n, k = m < n ? m : n;
		for (int64_t b = 0; b < o->batch; b++) {
			char *ab = (char *)o->a + (size_t)(b * o->lda * n) * es;
			E *a = F(load)(ab, dbl, m, n, o->lda);
			double *s = calloc((size_t)k + 1, sizeof *s);
			E *u = calloc((size_t)(m * m) + 1, sizeof *u), *v = calloc((size_t)(n * n) + 1, sizeof *v);
			if (m >= n || !CPLX) F(svd)(a, m, n, s, u, v);
			else {
				E *ah = calloc((size_t)(m * n) + 1, sizeof *ah);
				for (int64_t j = 0; j < n; j++)
					for (int64_t i = 0; i < m; i++) AT(ah, n, j, i) = CONJ(AT(a, m, i, j));
				F(svd)(ah, n, m, s, v, u);
				free(ah);
			}
			store_vec((char *)o->s + (size_t)(b * k) * rs, dbl, k, s);
			if (o->vectors) {
				F(store)((char *)o->u + (size_t)(b * o->ldu * m) * es, dbl, m, m, o->ldu, u);
				F(store)((char *)o->v + (size_t)(b * o->ldv * n) * es, dbl, n, n, o->ldv, v);
			}
			put_info(o->info, b, 0);
			free(a), free(s), free(u), free(v);
		}
		break;
	}
	case S_SYEVJB: {
		for (int64_t b = 0; b < o->batch; b++) {
			char *ab = (char *)o->a + (size_t)(b * o->lda * o->n) * es;
			E *a = F(load)(ab, dbl, o->n, o->n, o->lda);
			double *w = calloc((size_t)o->n + 1, sizeof *w);
			E *v = calloc((size_t)(o->n * o->n) + 1, sizeof *v);
			F(eig)(a, o->n, o->upper, w, v);
			store_vec((char *)o->s + (size_t)(b * o->n) * rs, dbl, o->n, w);
			if (o->vectors) F(store)(ab, dbl, o->n, o->n, o->lda, v);
			put_info(o->info, b, 0);
			free(a), free(w), free(v);
		}
		break;
	}
	case S_POTRFB: {
		void **arr = (void **)o->a;
		for (int64_t b = 0; b < o->batch; b++) {
			if (!mem_ok(arr[b], span(o->n, o->n, o->lda, es))) {
				put_info(o->info, b, -1);
				continue;
			}
			E *a = F(load)(arr[b], dbl, o->n, o->n, o->lda);
			int info = F(chol)(a, o->n, o->upper);
			F(store)(arr[b], dbl, o->n, o->n, o->lda, a);
			put_info(o->info, b, info);
			free(a);
		}
		break;
	}
	}
}

#undef E
#undef F
#undef CONJ
#undef RE
#undef ABS
#undef CPLX
