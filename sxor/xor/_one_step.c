/* One population gradient step of Part I (softmax heads, antisymmetric init) for a whole batch in
 * one call, parallel over instances (one thread per torch thread, instances handed out
 * dynamically). Plain C99; compiled by sxor/xor/native.py with -O3 -march=native and -fopenmp
 * (never -ffast-math: the reductions are vectorised explicitly with `omp simd reduction` or with
 * vectors of one cache line). With -fopenmp the threads are an OpenMP parallel region
 * (run_workers): the library needs libgomp.so.1, which the dynamic loader resolves to the runtime
 * torch has already loaded when torch's is that library, so the kernel runs on torch's own worker
 * threads (sxor/xor/native.py checks that no second runtime was loaded). Without OpenMP
 * (-fopenmp-simd only) it starts POSIX threads.
 *
 * Per instance b, with V_b = diag(scale_b) X_b (scale optional) and X_b[i, j] at
 * X + b*sb + i*sd + j*sm (i < d, j < m), either sd == 1 (the [m, d] layout) or sm == 1 ([d, m]):
 *   s = V theta0;  g = softmax(s), h = softmax(-s) (log-sum-exp);
 *   du_g = ||h||^2 g + h (2 g.h - 2 g h) - label, du_h = ||g||^2 h + g (2 g.h - 2 g h) - label;
 *   r = g (du_g - <g, du_g>), r~ = h (du_h - <h, du_h>);  grad = V^T r, grad~ = V^T r~;
 *   theta1 = theta0 - eta grad, theta1~ = -theta0 - eta grad~;
 *   g1 = softmax(V theta1), h1 = softmax(V theta1~), loss = L(g1, h1);
 *   and with `limit`: head = argmax V(-grad), head~ = argmax V(-grad~).
 *
 * Two forms of the first two steps (`fused`, chosen by the caller from the size of an instance):
 * three_pass_12 computes s, then r and r~ over d, then V^T r, V^T r~ (two reads of V, three with
 * the new scores); first_pass reads V once for both. It rests on one identity: with
 * E = exp(s - max s), F = exp(min s - s), Zg = sum E, Zh = sum F,
 *   g_i h_i = E_i F_i / (Zg Zh) = exp(min s - max s) / (Zg Zh) =: c   at every position i,
 * so t = 2 g.h - 2 g_i h_i = 2 c (d - 1) is a constant, g.h = d c, and (equal for any g, h; only
 * the constant t uses the identity)
 *   <g, du_g> = <h, du_h> = hh gg + t g.h - (g_a h_b + g_b h_a) =: L;
 *   r_i = g_i (hh g_i + h_i t - L) = hh g_i^2 + c t - L g_i, less g_a h_b at a and g_b h_a at b;
 *   r~_i = gg h_i^2 + c t - L h_i, less h_a g_b at a and h_b g_a at b.
 * Hence grad = (hh / Zg^2) V^T E^2 + c t V^T 1 - (L / Zg) V^T E - g_a h_b V_a - g_b h_a V_b (V_i
 * the rows of V at the support, read at the end), grad~ likewise with F,
 * and one read of V suffices to collect the five m-vectors V^T [1, E, E^2, F, F^2] beside the
 * scalars Zg, Zh, sum E^2, sum F^2 (E and F relative to the running max and min, the sums rescaled
 * when these move, as in an online softmax).
 * The combination cancels; where it would cancel badly (a head saturated on a support position)
 * the instance is redone in three passes (the end of first_pass).
 *
 * Returns the number of instances whose first scores were not all finite (the caller re-runs
 * those through the torch path, which names the problem), or -1 when memory ran out; bad[k] is 1
 * for those, 2 for an instance that the fused first pass handed to the three-pass form, else 0.
 */
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_THREADS 256
#define LINE(T) (64 / (int64_t)sizeof(T)) /* elements of type T in a 64-byte cache line */
#define PB_CHUNK 4096 /* elements of d per block of r, r~ in the three-pass [m, d] pullback (L2) */
#define CHUNK 1024 /* elements of d per block in the [m, d] layout: up to four blocks of scores stay in L1 */
/* The fused first pass gives way to three passes for an instance whose gradient is smaller than
 * 1/256 of the bound on the terms it is combined from (on the sphere's keys with |s| <= 1 the
 * ratio stays near 4 to 20 for m >= 2, up to about 50 at d = 64, and near 200 for m = 1). */
#define FUSED_MAX_CANCELLATION 256
/* Rows of V per tile of the fused first pass's [m, d] pullback: 6 PULL_ROWS accumulators of one
 * cache line each must stay in the vector registers (32 of a line with AVX-512: 4 rows; 16 of half
 * a line with AVX2: one row). The result does not depend on it (see pull_rows). */
#ifdef __AVX512F__
#define VEC_BYTES 64 /* bytes of the vectors the pullback's accumulators are made of */
#ifndef PULL_ROWS
#define PULL_ROWS 4
#endif
#else
#define VEC_BYTES 32
#ifndef PULL_ROWS
#define PULL_ROWS 1
#endif
#endif
#define NV (64 / VEC_BYTES) /* vectors per cache line */
/* Positions per pass of all rows in the fused first pass's [m, d] pullback: the weights of 256
 * positions (8 KiB in double) stay in L1 while all the rows pass, where one row at a time would
 * bring them back from L2 for every row (AVX2); with AVX-512, four rows at a time, the whole block.
 * The result does not depend on it (see pull_rows). */
#ifndef PULL_SUB
#ifdef __AVX512F__
#define PULL_SUB CHUNK
#else
#define PULL_SUB 256
#endif
#endif

/* exp(x) for x <= 0 (or NaN), branch-free so that loops over it vectorise: Cody-Waite reduction
 * x = k ln2 + r, |r| <= ln2 / 2, a degree-13 Taylor polynomial (truncation < 1e-17 relative), and
 * 2^k applied as two factors so that subnormal results round once. Within 2 ulp of exp.
 * No conversion between doubles and 64-bit integers (AVX2 has no vector instruction for it): k is
 * read from the bits of t = x log2e + 1.5 * 2^52, whose low bits hold it, and halved with logical
 * shifts only (k1 = trunc(k / 2), as C's division gives it; |k| < 2^51), so that AVX2 vectorises
 * it too; the same integers, so the same result bit for bit as the conversion.
 * The two special cases (x < -745.2, whose exp rounds to 0, and NaN) are selected with bit masks,
 * not with conditional expressions: a compiler that keeps floating-point exceptions exact
 * (-ftrapping-math, the default) turns a conditional around this much arithmetic into a branch,
 * and a branch stops the vectoriser wherever there are no masked vector instructions (AVX2).
 * Below -745.2 the arithmetic runs on 0 instead of x (its result is discarded), so that it forms
 * no subnormal numbers, which are slow on some CPUs. */
static inline uint64_t bits_of(double x) {
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}
static inline double double_of(uint64_t u) {
    double x;
    memcpy(&x, &u, sizeof x);
    return x;
}
static inline double exp_nonpos(double x) {
    const double log2e = 1.4426950408889634, ln2_hi = 6.93147180369123816490e-01,
                 ln2_lo = 1.90821492927058770002e-10, shifter = 6755399441055744.0; /* 1.5 * 2^52 */
    uint64_t under = -(uint64_t)(x < -745.2), nan = -(uint64_t)(x != x); /* all ones or zero */
    double xc = double_of(bits_of(x) & ~under);
    double t = xc * log2e + shifter;
    double kd = t - shifter;
    double r = (xc - kd * ln2_hi) - kd * ln2_lo;
    double p = 1.0 / 6227020800.0;
    p = p * r + 1.0 / 479001600.0;
    p = p * r + 1.0 / 39916800.0;
    p = p * r + 1.0 / 3628800.0;
    p = p * r + 1.0 / 362880.0;
    p = p * r + 1.0 / 40320.0;
    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
    uint64_t k = bits_of(t) - bits_of(shifter), neg = k >> 63, bias = (uint64_t)1 << 52; /* mod 2^64 */
    uint64_t k1 = ((k + neg + bias) >> 1) - (bias >> 1), k2 = k - k1; /* both >= -540 */
    double y = (p * double_of((k1 + 1023) << 52)) * double_of((k2 + 1023) << 52);
    return double_of((bits_of(y) & ~under & ~nan) | (bits_of(x) & nan));
}

/* The loops that sum exponentials: in vector lanes on AVX-512 builds (`omp simd reduction`, as the
 * kernel has always summed them there), in order elsewhere. Without masked vector instructions
 * those loops never vectorised, so they summed in order; a compiler may still vectorise the
 * exponentials of a loop whose sums run in order (GCC's in-order reductions), which keeps the
 * order of every sum. (The compiler still chooses which products to fuse into multiply-adds;
 * -ffp-contract=off would fix that choice, at the cost of changing every result of earlier
 * versions.) */
#ifdef __AVX512F__
#define LANE_SUMS(clause) _Pragma(clause)
#else
#define LANE_SUMS(clause)
#endif

/* Run fn(arg) on n threads at once (fn hands out the work itself, so any number of threads that
 * actually start finishes it): an OpenMP parallel region when compiled with -fopenmp, else n - 1
 * POSIX threads and the calling thread. */
static void run_workers(void *(*fn)(void *), void *arg, int n) {
#ifdef _OPENMP
#pragma omp parallel num_threads(n)
    fn(arg);
#else
    pthread_t tid[MAX_THREADS];
    int started = 0;
    pthread_attr_t attr; /* a stack of its own size: the blocks of scores take 4 CHUNK elements */
    int have_attr = pthread_attr_init(&attr) == 0 && pthread_attr_setstacksize(&attr, 1 << 21) == 0;
    for (int t = 1; t < n; t++)
        if (pthread_create(&tid[started], have_attr ? &attr : 0, fn, arg) == 0) started++;
    if (have_attr) pthread_attr_destroy(&attr);
    fn(arg); /* the calling thread works too */
    for (int t = 0; t < started; t++) pthread_join(tid[t], 0);
#endif
}

/* 1 when the threads are OpenMP's (shared with torch's runtime), 0 when they are POSIX threads. */
int sxor_openmp(void) {
#ifdef _OPENMP
    return 1;
#else
    return 0;
#endif
}

/* Software prefetch. Where V is stored [m, d], a block reads m rows of CHUNK positions, each a
 * separate stream that the hardware prefetcher has to pick up anew; the loops over a block therefore
 * fetch the rows they will read next (the next four rows of the block, or the first of the next
 * block) in step with the rows they read, PF_BYTES of each row at a time, into L2. The fused first
 * pass, whose pullback is bound by arithmetic rather than memory, fetches the whole next block while
 * it works, when two blocks fit in L2 (PF_BLOCK_BYTES). A prefetch is a hint: no result depends on
 * it. */
#define PF_BYTES 512
#ifndef PF_BLOCK_BYTES
#define PF_BLOCK_BYTES (384 << 10)
#endif
static inline void fetch_rows(const char *base, int64_t rows, int64_t row_bytes, int64_t from,
                              int64_t to) { /* bytes [from, to) of rows base + r row_bytes */
    for (int64_t r = 0; r < rows; r++)
        for (int64_t o = from; o < to; o += 64) __builtin_prefetch(base + r * row_bytes + o, 0, 2);
}

#define DEFINE_STEP(T, SUF)                                                                             \
/* Scores of a block of n <= CHUNK positions for nq in {1, 2, 4} queries q_k (m apart in q):            \
 * acc[k * CHUNK + i] = scale[i] sum_j X[i,j] q_k[j] (scale optional), with X and scale already         \
 * offset to the block's first position; nx: the positions of the next block (at X + CHUNK, [m, d]     \
 * layout), whose first rows are prefetched while the last are read, or 0. */                          \
static void block_scores_##SUF(const T *restrict X, int64_t n, int64_t m, int64_t sd, int64_t sm,       \
                               const T *restrict scale, const T *restrict q, int nq, T *restrict acc,   \
                               int64_t nx) {                                                            \
    if (sm == 1) { /* [d, m]: a dot product per row and query */                                        \
        for (int64_t i = 0; i < n; i++) {                                                               \
            const T *row = X + i * sd;                                                                  \
            for (int k = 0; k < nq; k++) {                                                              \
                const T *qk = q + k * m;                                                                \
                T s = 0;                                                                                \
                _Pragma("omp simd reduction(+:s)")                                                      \
                for (int64_t j = 0; j < m; j++) s += row[j] * qk[j];                                    \
                if (scale) s *= scale[i];                                                               \
                acc[k * CHUNK + i] = s;                                                                 \
            }                                                                                           \
        }                                                                                               \
        return;                                                                                         \
    }                                                                                                   \
    /* [m, d]: the block's scores in L1, updated from four rows of X at a time */                       \
    T *A0 = acc, *A1 = acc + CHUNK, *A2 = acc + 2 * CHUNK, *A3 = acc + 3 * CHUNK;                       \
    for (int k = 0; k < nq; k++) memset(acc + k * CHUNK, 0, n * sizeof(T));                             \
    const int64_t rb = sm * (int64_t)sizeof(T), sub = PF_BYTES / (int64_t)sizeof(T);                   \
    int64_t j = 0;                                                                                      \
    for (; j + 4 <= m; j += 4) {                                                                        \
        const T *r0 = X + j * sm, *r1 = r0 + sm, *r2 = r1 + sm, *r3 = r2 + sm;                          \
        const T *p0 = q + j, *p1 = q + m + j, *p2 = q + 2 * m + j, *p3 = q + 3 * m + j;                 \
        /* the rows read next: j + 4 on (up to four) of this block, else the next block's first four */ \
        const T *fr = j + 4 < m ? r0 + 4 * sm : nx ? X + CHUNK : r0; /* no pointer past the data */    \
        int64_t fk = j + 4 < m ? (m - j - 4 < 4 ? m - j - 4 : 4) : (m < 4 ? m : 4);                     \
        int64_t fn = j + 4 < m ? n : nx;                                                                \
        for (int64_t i0 = 0; i0 < n; i0 += sub) {                                                       \
            int64_t i1 = n - i0 < sub ? n : i0 + sub;                                                   \
            if (i0 < fn)                                                                                \
                fetch_rows((const char *)fr, fk, rb, i0 * (int64_t)sizeof(T),                           \
                           (i1 < fn ? i1 : fn) * (int64_t)sizeof(T));                                   \
            if (nq == 1) {                                                                              \
                _Pragma("omp simd")                                                                     \
                for (int64_t i = i0; i < i1; i++)                                                       \
                    A0[i] += p0[0] * r0[i] + p0[1] * r1[i] + p0[2] * r2[i] + p0[3] * r3[i];             \
            } else if (nq == 2) {                                                                       \
                _Pragma("omp simd")                                                                     \
                for (int64_t i = i0; i < i1; i++) {                                                     \
                    T v0 = r0[i], v1 = r1[i], v2 = r2[i], v3 = r3[i];                                   \
                    A0[i] += p0[0] * v0 + p0[1] * v1 + p0[2] * v2 + p0[3] * v3;                         \
                    A1[i] += p1[0] * v0 + p1[1] * v1 + p1[2] * v2 + p1[3] * v3;                         \
                }                                                                                       \
            } else {                                                                                    \
                _Pragma("omp simd")                                                                     \
                for (int64_t i = i0; i < i1; i++) {                                                     \
                    T v0 = r0[i], v1 = r1[i], v2 = r2[i], v3 = r3[i];                                   \
                    A0[i] += p0[0] * v0 + p0[1] * v1 + p0[2] * v2 + p0[3] * v3;                         \
                    A1[i] += p1[0] * v0 + p1[1] * v1 + p1[2] * v2 + p1[3] * v3;                         \
                    A2[i] += p2[0] * v0 + p2[1] * v1 + p2[2] * v2 + p2[3] * v3;                         \
                    A3[i] += p3[0] * v0 + p3[1] * v1 + p3[2] * v2 + p3[3] * v3;                         \
                }                                                                                       \
            }                                                                                           \
        }                                                                                               \
    }                                                                                                   \
    for (; j < m; j++) {                                                                                \
        const T *r0 = X + j * sm;                                                                       \
        if (j + 1 == m && nx) fetch_rows((const char *)(X + CHUNK), m < 4 ? m : 4, rb, 0, nx * (int64_t)sizeof(T)); \
        for (int k = 0; k < nq; k++) {                                                                  \
            T a = q[k * m + j], *Ak = acc + k * CHUNK;                                                  \
            _Pragma("omp simd")                                                                         \
            for (int64_t i = 0; i < n; i++) Ak[i] += a * r0[i];                                         \
        }                                                                                               \
    }                                                                                                   \
    if (scale)                                                                                          \
        for (int k = 0; k < nq; k++) {                                                                  \
            T *Ak = acc + k * CHUNK;                                                                    \
            _Pragma("omp simd")                                                                         \
            for (int64_t i = 0; i < n; i++) Ak[i] *= scale[i];                                          \
        }                                                                                               \
}                                                                                                       \
                                                                                                        \
/* Scores of nq in {2, 4} queries over all d positions: s_0, s_1 are written to out[0], out[1];         \
 * s_2, s_3 only enter the running argmax am[0], am[1] (first index of the maximum, NaN counting as     \
 * the maximum, as for torch.argmax). acc: a block of 4 CHUNK elements. */                              \
static inline void keep_##SUF(T v, int64_t i, T *best, int64_t *at) {                                   \
    if (v > *best || (v != v && *best == *best)) *best = v, *at = i;                                    \
}                                                                                                       \
static void scores_##SUF(const T *restrict X, int64_t d, int64_t m, int64_t sd, int64_t sm,             \
                         const T *restrict scale, const T *restrict q, int nq, T *out[2], int64_t am[2], \
                         T *restrict acc) {                                                             \
    T best[2] = {-INFINITY, -INFINITY};                                                                 \
    if (nq == 4) am[0] = am[1] = 0;                                                                     \
    for (int64_t c = 0; c < d; c += CHUNK) {                                                            \
        int64_t n = d - c < CHUNK ? d - c : CHUNK;                                                      \
        int64_t nx = sm == 1 || c + CHUNK >= d ? 0 : (d - c - CHUNK < CHUNK ? d - c - CHUNK : CHUNK);  \
        block_scores_##SUF(X + (sm == 1 ? c * sd : c), n, m, sd, sm, scale ? scale + c : 0, q, nq, acc, nx); \
        for (int k = 0; k < nq; k++) {                                                                  \
            T *Ak = acc + k * CHUNK;                                                                    \
            if (k < 2) {                                                                                \
                memcpy(out[k] + c, Ak, n * sizeof(T));                                                  \
                continue;                                                                               \
            }                                                                                           \
            T mx = -INFINITY;                                                                           \
            int nan = 0;                                                                                \
            _Pragma("omp simd reduction(max:mx) reduction(|:nan)")                                      \
            for (int64_t i = 0; i < n; i++) {                                                           \
                mx = Ak[i] > mx ? Ak[i] : mx;                                                           \
                nan |= Ak[i] != Ak[i];                                                                  \
            }                                                                                           \
            if (nan || mx > best[k - 2]) /* the block holds a new maximum: find its first index */      \
                for (int64_t i = 0; i < n; i++) keep_##SUF(Ak[i], c + i, &best[k - 2], &am[k - 2]);     \
        }                                                                                               \
    }                                                                                                   \
}                                                                                                       \
                                                                                                        \
/* The [m, d] block pullback for R rows x_r = x + r * sm (R = 1, 2 or 4, a constant where it is      \
 * called) over positions [i0, i1) (whole lines): the sums P[k * m + r] += sum_i x_r[i] K[i] w_k[i]    \
 * (K only when scaled) with w = (1, E, E^2, F, F^2) (E2, F2: the squares, formed once per block),     \
 * and of (x_r[i] K[i])^2, kept in vectors of one cache line: 6 R line accumulators, which stay in     \
 * the vector registers while they run (R = 4 with 32 registers of a line, AVX-512; R = 1 with 16 of   \
 * half a line, AVX2; PULL_ROWS) and in st (6 R lines) between calls. Every accumulator sums its       \
 * positions in the same order whatever R and however the positions are split into calls (which      \
 * products the compiler fuses into multiply-adds may still differ between builds). */               \
typedef T vec_##SUF __attribute__((vector_size(VEC_BYTES)));                                           \
static inline vec_##SUF load_##SUF(const T *p) {                                                        \
    vec_##SUF v;                                                                                        \
    memcpy(&v, p, sizeof v);                                                                            \
    return v;                                                                                           \
}                                                                                                       \
static inline T hsum_##SUF(const T *v) { /* a line's elements in order */                              \
    T s = 0;                                                                                            \
    for (int64_t l = 0; l < LINE(T); l++) s += v[l];                                                    \
    return s;                                                                                           \
}                                                                                                       \
static inline __attribute__((always_inline)) void                                                       \
pull_rows_##SUF(const int R, const int scaled, const T *restrict x, int64_t sm, int64_t i0, int64_t i1, \
                const T *restrict E, const T *restrict F, const T *restrict E2, const T *restrict F2,   \
                const T *restrict K, T *restrict st, int64_t nx) {                                      \
    const int64_t VL = VEC_BYTES / (int64_t)sizeof(T);                                                  \
    vec_##SUF acc[6][4][NV];                                                                            \
    for (int r = 0; r < R; r++)                                                                         \
        for (int k = 0; k < 6; k++)                                                                     \
            for (int h = 0; h < NV; h++) acc[k][r][h] = load_##SUF(st + (r * 6 + k) * LINE(T) + h * VL); \
    for (int64_t i = i0; i < i1; i += LINE(T)) {                                                        \
        if (i < nx) /* the same rows of the next block (see PF_BLOCK_BYTES) */                          \
            for (int r = 0; r < R; r++) __builtin_prefetch(x + r * sm + CHUNK + i, 0, 2);               \
        for (int h = 0; h < NV; h++) {                                                                  \
            int64_t o = i + h * VL;                                                                     \
            vec_##SUF v[4];                                                                             \
            for (int r = 0; r < R; r++) v[r] = load_##SUF(x + r * sm + o);                              \
            if (scaled) {                                                                               \
                vec_##SUF k = load_##SUF(K + o);                                                        \
                for (int r = 0; r < R; r++) v[r] *= k;                                                  \
            }                                                                                           \
            vec_##SUF g = load_##SUF(E + o), u = load_##SUF(F + o);                                     \
            vec_##SUF g2 = load_##SUF(E2 + o), u2 = load_##SUF(F2 + o);                                 \
            for (int r = 0; r < R; r++) {                                                               \
                acc[0][r][h] += v[r];                                                                   \
                acc[1][r][h] += v[r] * g;                                                               \
                acc[2][r][h] += v[r] * g2;                                                              \
                acc[3][r][h] += v[r] * u;                                                               \
                acc[4][r][h] += v[r] * u2;                                                              \
                acc[5][r][h] += v[r] * v[r];                                                            \
            }                                                                                           \
        }                                                                                               \
    }                                                                                                   \
    for (int r = 0; r < R; r++)                                                                         \
        for (int k = 0; k < 6; k++)                                                                     \
            for (int h = 0; h < NV; h++) memcpy(st + (r * 6 + k) * LINE(T) + h * VL, &acc[k][r][h], sizeof(vec_##SUF)); \
}                                                                                                       \
static void pull_##SUF(int scaled, const T *restrict x, int64_t sm, int64_t i0, int64_t i1,             \
                       const T *restrict E, const T *restrict F, const T *restrict E2,                  \
                       const T *restrict F2, const T *restrict K, T *restrict st, int64_t nx) {         \
    if (scaled) pull_rows_##SUF(PULL_ROWS, 1, x, sm, i0, i1, E, F, E2, F2, K, st, nx);                  \
    else pull_rows_##SUF(PULL_ROWS, 0, x, sm, i0, i1, E, F, E2, F2, K, st, nx);                         \
}                                                                                                       \
                                                                                                        \
/* Block pullback of the first pass: P[k * m + j] += sum_i X[i,j] K[i] w_k[i] with the five weight      \
 * rows w = (1, E, E^2, F, F^2) of a block of n positions (X and K, the scale or 0 for none, offset     \
 * to the block's first position; the squares are formed here, not stored); nx: the positions of the  \
 * next block to prefetch ([m, d] layout), or 0. */                                                     \
static void block_pullback5_##SUF(const T *restrict X, int64_t n, int64_t m, int64_t sd, int64_t sm,    \
                                  const T *restrict E, const T *restrict F, const T *restrict E2,      \
                                  const T *restrict F2, const T *restrict K, T *restrict P,            \
                                  int64_t nx, T *restrict st) {                                         \
    T *P0 = P, *P1 = P + m, *P2 = P + 2 * m, *P3 = P + 3 * m, *P4 = P + 4 * m, *P5 = P + 5 * m;         \
    if (sm == 1) { /* [d, m]: two rows at a time added into the six m-vectors */                        \
        int64_t i = 0;                                                                                  \
        for (; i + 2 <= n; i += 2) {                                                                    \
            const T *x0 = X + i * sd, *x1 = x0 + sd;                                                    \
            T a0 = K ? K[i] : (T)1, a1 = K ? K[i + 1] : (T)1;                                           \
            T b0 = E[i] * a0, b1 = E[i + 1] * a1, c0 = E[i] * E[i] * a0, c1 = E[i + 1] * E[i + 1] * a1; \
            T e0 = F[i] * a0, e1 = F[i + 1] * a1, f0 = F[i] * F[i] * a0, f1 = F[i + 1] * F[i + 1] * a1; \
            T q0 = a0 * a0, q1 = a1 * a1;                                                               \
            _Pragma("omp simd")                                                                         \
            for (int64_t j = 0; j < m; j++) {                                                           \
                T v0 = x0[j], v1 = x1[j];                                                               \
                P5[j] += q0 * (v0 * v0) + q1 * (v1 * v1);                                               \
                P0[j] += a0 * v0 + a1 * v1;                                                             \
                P1[j] += b0 * v0 + b1 * v1;                                                             \
                P2[j] += c0 * v0 + c1 * v1;                                                             \
                P3[j] += e0 * v0 + e1 * v1;                                                             \
                P4[j] += f0 * v0 + f1 * v1;                                                             \
            }                                                                                           \
        }                                                                                               \
        for (; i < n; i++) {                                                                            \
            const T *x0 = X + i * sd;                                                                   \
            T a0 = K ? K[i] : (T)1, b0 = E[i] * a0, c0 = E[i] * E[i] * a0, e0 = F[i] * a0, f0 = F[i] * F[i] * a0; \
            T q0 = a0 * a0;                                                                             \
            _Pragma("omp simd")                                                                         \
            for (int64_t j = 0; j < m; j++) {                                                           \
                T v0 = x0[j];                                                                           \
                P5[j] += q0 * (v0 * v0);                                                                \
                P0[j] += a0 * v0;                                                                       \
                P1[j] += b0 * v0;                                                                       \
                P2[j] += c0 * v0;                                                                       \
                P3[j] += e0 * v0;                                                                       \
                P4[j] += f0 * v0;                                                                       \
            }                                                                                           \
        }                                                                                               \
        return;                                                                                         \
    }                                                                                                   \
    /* [m, d]: dot products of rows with the five weight rows, and squares: the first 4 (m / 4) rows    \
     * in line accumulators (st, 6 lines a row), PULL_ROWS rows at a time over PULL_SUB positions (so  \
     * that the weights of those positions stay in L1 while all the rows pass), then the positions     \
     * after the last whole line; the remaining rows one by one */                                      \
    int64_t mg = m - m % 4, full = n - n % LINE(T), j = 0;                                              \
    memset(st, 0, (size_t)(6 * LINE(T) * mg) * sizeof(T));                                              \
    for (int64_t s0 = 0; s0 < full; s0 += PULL_SUB) {                                                   \
        int64_t s1 = full - s0 < PULL_SUB ? full : s0 + PULL_SUB;                                       \
        for (j = 0; j + PULL_ROWS <= mg; j += PULL_ROWS)                                                \
            pull_##SUF(K != 0, X + j * sm, sm, s0, s1, E, F, E2, F2, K, st + 6 * LINE(T) * j, nx);      \
    }                                                                                                   \
    for (j = 0; j < mg; j++) {                                                                          \
        T t[6] = {0};                                                                                   \
        for (int64_t i = full; i < n; i++) {                                                            \
            T g = E[i], h = F[i], w[5] = {1, g, g * g, h, h * h};                                       \
            T v = K ? X[j * sm + i] * K[i] : X[j * sm + i];                                             \
            for (int k = 0; k < 5; k++) t[k] += v * w[k];                                               \
            t[5] += v * v;                                                                              \
        }                                                                                               \
        for (int k = 0; k < 6; k++) P[k * m + j] += hsum_##SUF(st + (6 * j + k) * LINE(T)) + t[k];     \
    }                                                                                                   \
    for (; j < m; j++) {                                                                                \
        const T *x0 = X + j * sm;                                                                       \
        if (nx) fetch_rows((const char *)(x0 + CHUNK), 1, 0, 0, nx * (int64_t)sizeof(T));               \
        T a0 = 0, b0 = 0, c0 = 0, e0 = 0, f0 = 0, q0 = 0;                                               \
        _Pragma("omp simd reduction(+:a0,b0,c0,e0,f0,q0)")                                              \
        for (int64_t i = 0; i < n; i++) {                                                               \
            T v0 = K ? x0[i] * K[i] : x0[i], g = E[i], h = F[i];                                        \
            a0 += v0, b0 += v0 * g, c0 += v0 * (g * g), e0 += v0 * h, f0 += v0 * (h * h), q0 += v0 * v0; \
        }                                                                                               \
        P0[j] += a0, P1[j] += b0, P2[j] += c0, P3[j] += e0, P4[j] += f0, P5[j] += q0;                   \
    }                                                                                                   \
}                                                                                                       \
                                                                                                        \
/* gr[j] = sum_i X[i,j] r[i], gt[j] = sum_i X[i,j] rt[i] */                                             \
static void pullback_##SUF(const T *restrict X, int64_t d, int64_t m, int64_t sd, int64_t sm,           \
                           const T *restrict r, const T *restrict rt, T *restrict gr, T *restrict gt) { \
    for (int64_t j = 0; j < m; j++) gr[j] = gt[j] = 0;                                                  \
    if (sm == 1) { /* [d, m]: four rows at a time added into the m-vectors */                           \
        int64_t i = 0;                                                                                  \
        for (; i + 4 <= d; i += 4) {                                                                    \
            const T *w0 = X + i * sd, *w1 = w0 + sd, *w2 = w1 + sd, *w3 = w2 + sd;                      \
            T a0 = r[i], a1 = r[i + 1], a2 = r[i + 2], a3 = r[i + 3];                                   \
            T b0 = rt[i], b1 = rt[i + 1], b2 = rt[i + 2], b3 = rt[i + 3];                               \
            _Pragma("omp simd")                                                                         \
            for (int64_t j = 0; j < m; j++) {                                                           \
                T v0 = w0[j], v1 = w1[j], v2 = w2[j], v3 = w3[j];                                       \
                gr[j] += a0 * v0 + a1 * v1 + a2 * v2 + a3 * v3;                                         \
                gt[j] += b0 * v0 + b1 * v1 + b2 * v2 + b3 * v3;                                         \
            }                                                                                           \
        }                                                                                               \
        for (; i < d; i++) {                                                                            \
            const T *row = X + i * sd;                                                                  \
            T a = r[i], b = rt[i];                                                                      \
            _Pragma("omp simd")                                                                         \
            for (int64_t j = 0; j < m; j++) {                                                           \
                gr[j] += a * row[j];                                                                    \
                gt[j] += b * row[j];                                                                    \
            }                                                                                           \
        }                                                                                               \
        return;                                                                                         \
    }                                                                                                   \
    for (int64_t c = 0; c < d; c += PB_CHUNK) { /* [m, d]: dot products of four rows with r, rt */      \
        int64_t n = d - c < PB_CHUNK ? d - c : PB_CHUNK;                                                \
        const T *rc = r + c, *tc = rt + c;                                                              \
        int64_t j = 0;                                                                                  \
        for (; j + 4 <= m; j += 4) {                                                                    \
            const T *w0 = X + j * sm + c, *w1 = w0 + sm, *w2 = w1 + sm, *w3 = w2 + sm;                  \
            T a0 = 0, a1 = 0, a2 = 0, a3 = 0, b0 = 0, b1 = 0, b2 = 0, b3 = 0;                           \
            _Pragma("omp simd reduction(+:a0,a1,a2,a3,b0,b1,b2,b3)")                                    \
            for (int64_t i = 0; i < n; i++) {                                                           \
                T x = rc[i], y = tc[i];                                                                 \
                a0 += w0[i] * x;                                                                        \
                a1 += w1[i] * x;                                                                        \
                a2 += w2[i] * x;                                                                        \
                a3 += w3[i] * x;                                                                        \
                b0 += w0[i] * y;                                                                        \
                b1 += w1[i] * y;                                                                        \
                b2 += w2[i] * y;                                                                        \
                b3 += w3[i] * y;                                                                        \
            }                                                                                           \
            gr[j] += a0, gr[j + 1] += a1, gr[j + 2] += a2, gr[j + 3] += a3;                             \
            gt[j] += b0, gt[j + 1] += b1, gt[j + 2] += b2, gt[j + 3] += b3;                             \
        }                                                                                               \
        for (; j < m; j++) {                                                                            \
            const T *row = X + j * sm + c;                                                              \
            T a = 0, b = 0;                                                                             \
            _Pragma("omp simd reduction(+:a,b)")                                                        \
            for (int64_t i = 0; i < n; i++) {                                                           \
                a += row[i] * rc[i];                                                                    \
                b += row[i] * tc[i];                                                                    \
            }                                                                                           \
            gr[j] += a;                                                                                 \
            gt[j] += b;                                                                                 \
        }                                                                                               \
    }                                                                                                   \
}                                                                                                       \
                                                                                                        \
/* g = softmax(a) and h = softmax(b) in place (log-sum-exp: exp(x - max) / sum); returns the sums of    \
 * squares gg, hh, the inner product gh and sum (g h)^2 of the normalised weights. */                   \
static void softmax2_##SUF(T *a, T *b, int64_t d, T mxa, T mxb, T *gg, T *hh, T *gh, T *dg) {           \
    double za = 0, zb = 0;                                                                              \
    LANE_SUMS("omp simd reduction(+:za,zb)")                                                            \
    for (int64_t i = 0; i < d; i++) {                                                                   \
        T ea = (T)exp_nonpos((double)(a[i] - mxa)), eb = (T)exp_nonpos((double)(b[i] - mxb));           \
        a[i] = ea;                                                                                      \
        b[i] = eb;                                                                                      \
        za += ea;                                                                                       \
        zb += eb;                                                                                       \
    }                                                                                                   \
    T ia = (T)1 / (T)za, ib = (T)1 / (T)zb, s_gg = 0, s_hh = 0, s_gh = 0, s_dg = 0;                     \
    _Pragma("omp simd reduction(+:s_gg,s_hh,s_gh,s_dg)")                                                \
    for (int64_t i = 0; i < d; i++) {                                                                   \
        T g = a[i] * ia, h = b[i] * ib, p = g * h;                                                      \
        a[i] = g;                                                                                       \
        b[i] = h;                                                                                       \
        s_gg += g * g;                                                                                  \
        s_hh += h * h;                                                                                  \
        s_gh += p;                                                                                      \
        s_dg += p * p;                                                                                  \
    }                                                                                                   \
    *gg = s_gg, *hh = s_hh, *gh = s_gh, *dg = s_dg;                                                     \
}                                                                                                       \
                                                                                                        \
/* The largest and smallest of v[0..n) in *mx, *mn; returns 1 when one of them is inf or nan. */        \
static inline int extremes_##SUF(const T *restrict v, int64_t n, T *mx, T *mn) {                        \
    T hi = -INFINITY, lo = INFINITY;                                                                    \
    int bad = 0;                                                                                        \
    _Pragma("omp simd reduction(max:hi) reduction(min:lo) reduction(|:bad)")                            \
    for (int64_t i = 0; i < n; i++) {                                                                   \
        T x = v[i];                                                                                     \
        bad |= (x - x) != 0; /* inf or nan */                                                           \
        hi = x > hi ? x : hi;                                                                           \
        lo = x < lo ? x : lo;                                                                           \
    }                                                                                                   \
    *mx = hi, *mn = lo;                                                                                 \
    return bad;                                                                                         \
}                                                                                                       \
                                                                                                        \
/* Passes 1 and 2 as three passes would do them (for instances that stay in the cache between the       \
 * passes, where the first pass's extra sums cost more than a second read): the scores and weights      \
 * in the rows g, h (the outputs g1, h1, overwritten by pass 3), r and r~ formed there, then the        \
 * gradients V^T r, V^T r~. Returns 1 when a score is not finite. */                                    \
static int three_pass_12_##SUF(const T *X, int64_t d, int64_t m, int64_t sd, int64_t sm, const T *scale, \
                               const T *theta0, int64_t a, int64_t b, T *g, T *h, T *restrict gr,       \
                               T *restrict gt, T *blk) {                                                \
    T *out[2] = {g, 0};                                                                                 \
    scores_##SUF(X, d, m, sd, sm, scale, theta0, 1, out, 0, blk); /* pass 1: s = V theta0 */            \
    T mx, mn;                                                                                           \
    if (extremes_##SUF(g, d, &mx, &mn)) return 1;                                                       \
    _Pragma("omp simd")                                                                                 \
    for (int64_t i = 0; i < d; i++) h[i] = -g[i];                                                       \
    T gg, hh, gh, dg;                                                                                   \
    softmax2_##SUF(g, h, d, mx, -mn, &gg, &hh, &gh, &dg);                                               \
    T ga = g[a], gb = g[b], ha = h[a], hb = h[b];                                                       \
    T cg = 0, ch = 0; /* <g, du_g>, <h, du_h> */                                                        \
    _Pragma("omp simd reduction(+:cg,ch)")                                                              \
    for (int64_t i = 0; i < d; i++) {                                                                   \
        T t = 2 * gh - 2 * (g[i] * h[i]);                                                               \
        T ug = hh * g[i] + h[i] * t, uh = gg * h[i] + g[i] * t;                                         \
        cg += g[i] * ug;                                                                                \
        ch += h[i] * uh;                                                                                \
    }                                                                                                   \
    cg -= ga * hb + gb * ha;                                                                            \
    ch -= ha * gb + hb * ga;                                                                            \
    _Pragma("omp simd")                                                                                 \
    for (int64_t i = 0; i < d; i++) {                                                                   \
        T gi = g[i], hi = h[i];                                                                         \
        T t = 2 * gh - 2 * (gi * hi);                                                                   \
        T ug = hh * gi + hi * t, uh = gg * hi + gi * t;                                                 \
        g[i] = gi * (ug - cg);                                                                          \
        h[i] = hi * (uh - ch);                                                                          \
    }                                                                                                   \
    {   /* the label terms at the support: du_g -= (h_b, h_a) at (a, b), du_h -= (g_b, g_a) */          \
        T t = 2 * gh - 2 * (ga * ha), ug = hh * ga + ha * t, uh = gg * ha + ga * t;                     \
        g[a] = ga * ((ug - hb) - cg);                                                                   \
        h[a] = ha * ((uh - gb) - ch);                                                                   \
        t = 2 * gh - 2 * (gb * hb), ug = hh * gb + hb * t, uh = gg * hb + gb * t;                       \
        g[b] = gb * ((ug - ha) - cg);                                                                   \
        h[b] = hb * ((uh - ga) - ch);                                                                   \
    }                                                                                                   \
    if (scale)                                                                                          \
        for (int64_t i = 0; i < d; i++) {                                                               \
            g[i] *= scale[i];                                                                           \
            h[i] *= scale[i];                                                                           \
        }                                                                                               \
    pullback_##SUF(X, d, m, sd, sm, g, h, gr, gt); /* pass 2: V^T r, V^T r~ */                          \
    return 0;                                                                                           \
}                                                                                                       \
                                                                                                        \
/* Passes 1 and 2 in one read of V. Block by block: the scores s = V theta0, then E = exp(s - M),       \
 * F = exp(N - s) (M, N the running maximum and minimum of s, the sums rescaled when they move, as      \
 * in an online softmax) and the five m-vectors P = X^T diag(scale) [1, E, E^2, F, F^2]. The            \
 * gradients follow in closed form, because g_i h_i = exp(N - M) / (Zg Zh) =: c is the same at          \
 * every position: then t = 2 g.h - 2 g h = 2 c (d - 1), <g, du_g> = <h, du_h> = gg hh + t g.h -        \
 * (g_a h_b + g_b h_a) =: L, and r = hh g^2 + c t - L g less g_a h_b at a and g_b h_a at b (r~ the      \
 * same with g and h exchanged). P: 6 m sums (the sixth of (X K)^2, for the error bound); blk: 4 CHUNK  \
 * of block workspace; st: 6 LINE m of pullback state (pull_rows). Returns 1 when a score is not        \
 * finite, 2 when the result would lose more than                                                       \
 * FUSED_MAX_CANCELLATION to cancellation (see the end), else 0. */                                     \
static int first_pass_##SUF(const T *X, int64_t d, int64_t m, int64_t sd, int64_t sm, const T *scale,   \
                            const T *theta0, int64_t a, int64_t b, T *restrict gr, T *restrict gt,      \
                            T *restrict P, T *restrict blk, T *restrict st) {                           \
    T *S = blk, *Fb = blk + CHUNK, *E2 = blk + 2 * CHUNK, *F2 = blk + 3 * CHUNK;                        \
    memset(P, 0, (size_t)(6 * m) * sizeof(T));                                                          \
    double zg = 0, zh = 0, eg = 0, eh = 0, eg4 = 0, eh4 = 0; /* sums of E, F, E^2, F^2, E^4, F^4 */     \
    T M = -INFINITY, N = INFINITY, sa = 0, sb = 0;                                                      \
    for (int64_t c = 0; c < d; c += CHUNK) {                                                            \
        int64_t n = d - c < CHUNK ? d - c : CHUNK;                                                      \
        const T *Xc = X + (sm == 1 ? c * sd : c), *sc = scale ? scale + c : 0;                          \
        int64_t nx = sm == 1 || c + CHUNK >= d ? 0 : (d - c - CHUNK < CHUNK ? d - c - CHUNK : CHUNK);  \
        block_scores_##SUF(Xc, n, m, sd, sm, sc, theta0, 1, S, nx);                                     \
        T bmx, bmn;                                                                                     \
        if (extremes_##SUF(S, n, &bmx, &bmn)) return 1;                                                 \
        if (a >= c && a < c + n) sa = S[a - c];                                                         \
        if (b >= c && b < c + n) sb = S[b - c];                                                         \
        if (bmx > M) { /* a new maximum: rescale the sums of E and E^2 */                               \
            double f = exp_nonpos((double)(M - bmx));                                                   \
            T f1 = (T)f, f2 = (T)(f * f);                                                               \
            for (int64_t j = 0; j < m; j++) P[m + j] *= f1, P[2 * m + j] *= f2;                         \
            zg *= f, eg *= f * f, eg4 *= (f * f) * (f * f), M = bmx;                                    \
        }                                                                                               \
        if (bmn < N) {                                                                                  \
            double f = exp_nonpos((double)(bmn - N));                                                   \
            T f1 = (T)f, f2 = (T)(f * f);                                                               \
            for (int64_t j = 0; j < m; j++) P[3 * m + j] *= f1, P[4 * m + j] *= f2;                     \
            zh *= f, eh *= f * f, eh4 *= (f * f) * (f * f), N = bmn;                                    \
        }                                                                                               \
        double bzg = 0, bzh = 0, beg = 0, beh = 0, beg4 = 0, beh4 = 0;                                  \
        LANE_SUMS("omp simd reduction(+:bzg,bzh,beg,beh,beg4,beh4)")                                    \
        for (int64_t i = 0; i < n; i++) { /* E overwrites the scores */                                 \
            T e = (T)exp_nonpos((double)(S[i] - M)), f = (T)exp_nonpos((double)(N - S[i]));             \
            S[i] = e, Fb[i] = f, E2[i] = e * e, F2[i] = f * f;                                          \
            double e2 = (double)e * e, f2 = (double)f * f;                                              \
            bzg += e, bzh += f, beg += e2, beh += f2, beg4 += e2 * e2, beh4 += f2 * f2;                 \
        }                                                                                               \
        zg += bzg, zh += bzh, eg += beg, eh += beh, eg4 += beg4, eh4 += beh4;                           \
        /* the whole next block while this one's arithmetic runs, where two blocks fit in L2 */         \
        int64_t pnx = m * CHUNK * (int64_t)sizeof(T) <= PF_BLOCK_BYTES ? nx : 0;                        \
        block_pullback5_##SUF(Xc, n, m, sd, sm, S, Fb, E2, F2, sc, P, pnx, st);                         \
    }                                                                                                   \
    T iz = (T)1 / (T)zg, jz = (T)1 / (T)zh;                                                             \
    T gg = (T)eg * iz * iz, hh = (T)eh * jz * jz;                                                       \
    T c = (T)exp_nonpos((double)(N - M)) * iz * jz, gh = (T)d * c, t = 2 * gh - 2 * c;                  \
    T ga = (T)exp_nonpos((double)(sa - M)) * iz, gb = (T)exp_nonpos((double)(sb - M)) * iz;             \
    T ha = (T)exp_nonpos((double)(N - sa)) * jz, hb = (T)exp_nonpos((double)(N - sb)) * jz;             \
    T L = hh * gg + t * gh - (ga * hb + gb * ha);                                                       \
    T ka = scale ? scale[a] : (T)1, kb = scale ? scale[b] : (T)1, c0 = c * t;                           \
    T c2g = hh * iz * iz, c1g = L * iz, c2h = gg * jz * jz, c1h = L * jz;                               \
    T la = ga * hb * ka, lb = gb * ha * kb, lta = ha * gb * ka, ltb = hb * ga * kb;                     \
    const T *xa = X + a * sd, *xb = X + b * sd;                                                         \
    /* The combination cancels: its rounding error is a modest multiple (growing slowly with d) of      \
     * the unit roundoff times the size of its terms, which Cauchy-Schwarz bounds by                    \
     * sqrt(sum_i (X_ij K_i)^2) (P[5 m + j]) times the norms of the weights, plus the label terms.      \
     * Where that size exceeds FUSED_MAX_CANCELLATION times the gradient's (a head saturated on a       \
     * support position, whose true gradient nearly vanishes), the caller redoes the instance in        \
     * three passes, whose rounding stays nearer the size of r itself there. The comparison is          \
     * scale-free (both sides divided by the largest bound), and a sum of squares near underflow        \
     * (entries of V below about 1e-140 in double, 1e-15 in float) or not finite also hands the         \
     * instance over, so that no magnitude of V skips the test. */                                      \
    double sg = sqrt(eg4) * fabs((double)c2g) + sqrt((double)d) * fabs((double)c0) + sqrt(eg) * fabs((double)c1g); \
    double sh = sqrt(eh4) * fabs((double)c2h) + sqrt((double)d) * fabs((double)c0) + sqrt(eh) * fabs((double)c1h); \
    const double tiny = sizeof(T) == 4 ? 1e-30 : 1e-280;                                                \
    double top = 0;                                                                                     \
    int unreliable = 0;                                                                                 \
    for (int64_t j = 0; j < m; j++) {                                                                   \
        T va = xa[j * sm], vb = xb[j * sm];                                                             \
        gr[j] = c2g * P[2 * m + j] + c0 * P[j] - c1g * P[m + j] - la * va - lb * vb;                    \
        gt[j] = c2h * P[4 * m + j] + c0 * P[j] - c1h * P[3 * m + j] - lta * va - ltb * vb;              \
        double p5 = (double)P[5 * m + j], q = sqrt(p5), ua = fabs((double)va), ub = fabs((double)vb);   \
        double bg = q * sg + fabs((double)la) * ua + fabs((double)lb) * ub;                             \
        double bh = q * sh + fabs((double)lta) * ua + fabs((double)ltb) * ub;                           \
        unreliable |= !(p5 >= tiny) || !(bg <= DBL_MAX) || !(bh <= DBL_MAX);                            \
        top = bg > top ? bg : top;                                                                      \
        top = bh > top ? bh : top;                                                                      \
    }                                                                                                   \
    if (unreliable || !(top > 0)) return 2;                                                             \
    double ng = 0, nh = 0, tg = 0, th = 0;                                                              \
    for (int64_t j = 0; j < m; j++) {                                                                   \
        double q = sqrt((double)P[5 * m + j]) / top, ua = fabs((double)xa[j * sm]) / top, ub = fabs((double)xb[j * sm]) / top; \
        double bg = q * sg + fabs((double)la) * ua + fabs((double)lb) * ub;                             \
        double bh = q * sh + fabs((double)lta) * ua + fabs((double)ltb) * ub;                           \
        double ug = (double)gr[j] / top, uh = (double)gt[j] / top;                                      \
        ng += ug * ug, nh += uh * uh, tg += bg * bg, th += bh * bh;                                     \
    }                                                                                                   \
    const double k2 = (double)FUSED_MAX_CANCELLATION * FUSED_MAX_CANCELLATION;                          \
    return tg <= k2 * ng && th <= k2 * nh ? 0 : 2; /* 2 (also for a nan): three passes instead */       \
}                                                                                                       \
                                                                                                        \
/* One instance: w holds 4 queries of length m, 2 gradients, the 6 m sums of the fused first pass and  \
 * its 6 LINE m elements of pullback state; blk, 4 CHUNK of block workspace (the scores of pass 3; E, F and their squares in the first). */\
static int instance_##SUF(const T *X, int64_t d, int64_t m, int64_t sd, int64_t sm, const T *scale,     \
                          const T *theta0, int64_t a, int64_t b, T eta, int limit, int stop_bad,        \
                          T *theta1, T *theta1t, T *loss, T *g1, T *h1, int64_t *head, int64_t *headt,  \
                          int fused, T *w, T *blk) {                                                    \
    T *q = w, *gr = q + 4 * m, *gt = gr + m, *P = gt + m;                                               \
    int r = fused ? first_pass_##SUF(X, d, m, sd, sm, scale, theta0, a, b, gr, gt, P, blk, P + 6 * m) : 2; \
    int fell_back = fused && r == 2;                                                                    \
    if (r == 2) r = three_pass_12_##SUF(X, d, m, sd, sm, scale, theta0, a, b, g1, h1, gr, gt, blk);     \
    if (r) {                                                                                            \
        if (stop_bad) return 1;                                                                         \
        for (int64_t j = 0; j < m; j++) theta1[j] = theta1t[j] = NAN;                                   \
        for (int64_t i = 0; i < d; i++) g1[i] = h1[i] = NAN;                                            \
        *loss = NAN;                                                                                    \
        if (limit) *head = *headt = 0;                                                                  \
        return 1;                                                                                       \
    }                                                                                                   \
    T gg, hh, gh, dg;                                                                                   \
    for (int64_t j = 0; j < m; j++) {                                                                   \
        theta1[j] = q[j] = theta0[j] - eta * gr[j];                                                     \
        theta1t[j] = q[m + j] = -theta0[j] - eta * gt[j];                                               \
        q[2 * m + j] = -gr[j];                                                                          \
        q[3 * m + j] = -gt[j];                                                                          \
    }                                                                                                   \
    T *o[2] = {g1, h1};                                                                                 \
    int64_t am[2];                                                                                      \
    scores_##SUF(X, d, m, sd, sm, scale, q, limit ? 4 : 2, o, am, blk); /* pass 3: the new scores */    \
    if (limit) *head = am[0], *headt = am[1];                                                           \
    T m1 = -INFINITY, m2 = -INFINITY;                                                                   \
    _Pragma("omp simd reduction(max:m1,m2)")                                                            \
    for (int64_t i = 0; i < d; i++) {                                                                   \
        m1 = g1[i] > m1 ? g1[i] : m1;                                                                   \
        m2 = h1[i] > m2 ? h1[i] : m2;                                                                   \
    }                                                                                                   \
    softmax2_##SUF(g1, h1, d, m1, m2, &gg, &hh, &gh, &dg);                                              \
    T label = g1[a] * h1[b] + g1[b] * h1[a];                                                            \
    *loss = (T)0.5 * (gg * hh + 2 * gh * gh - 2 * dg) - label + (T)0.5;                                 \
    return fell_back ? 2 : 0; /* 2: the fused first pass gave way to three passes */                    \
}                                                                                                       \
                                                                                                        \
typedef struct {                                                                                        \
    int64_t B, d, m, sb, sd, sm, scb, tb, ub, eb;                                                       \
    const T *X, *scale, *theta0, *eta;                                                                  \
    const int64_t *support;                                                                             \
    int limit, stop_bad, fused;                                                                         \
    T *theta1, *theta1t, *loss, *g1, *h1;                                                               \
    int64_t *head, *headt, *bad, next, nbad, oom;                                                       \
} job_##SUF;                                                                                            \
                                                                                                        \
static void *worker_##SUF(void *arg) {                                                                  \
    job_##SUF *J = (job_##SUF *)arg;                                                                    \
    int64_t d = J->d, m = J->m, nbad = 0;                                                               \
    /* the blocks of CHUNK elements on the stack (a freed heap block of this size could make malloc     \
     * hand back the top of the heap, and the caller's next outputs would fault their pages in again);  \
     * the m-vectors (4 queries, 2 gradients, 6 sums) on the heap */                                    \
    T blk[4 * CHUNK] __attribute__((aligned(64)));                                                      \
    T *w = (T *)malloc((size_t)((12 + 6 * LINE(T)) * m) * sizeof(T));                                  \
    if (!w) {                                                                                           \
        __atomic_fetch_add(&J->oom, 1, __ATOMIC_RELAXED);                                               \
        return 0;                                                                                       \
    }                                                                                                   \
    for (;;) { /* dynamic scheduling: the next instance not yet taken */                                \
        int64_t k = __atomic_fetch_add(&J->next, 1, __ATOMIC_RELAXED);                                  \
        if (k >= J->B) break;                                                                           \
        int r = instance_##SUF(J->X + k * J->sb, d, m, J->sd, J->sm, J->scale ? J->scale + k * J->scb : 0, \
                               J->theta0 + k * J->tb, J->support[k * J->ub], J->support[k * J->ub + 1], \
                               J->eta[k * J->eb], J->limit, J->stop_bad, J->theta1 + k * m,             \
                               J->theta1t + k * m, J->loss + k, J->g1 + k * d, J->h1 + k * d,           \
                               J->head + k, J->headt + k, J->fused, w, blk);                            \
        J->bad[k] = r; /* 0, 1 (scores not finite) or 2 (three passes instead of the fused pass) */     \
        nbad += r == 1;                                                                                 \
    }                                                                                                   \
    free(w);                                                                                            \
    __atomic_fetch_add(&J->nbad, nbad, __ATOMIC_RELAXED);                                               \
    return 0;                                                                                           \
}                                                                                                       \
                                                                                                        \
int64_t sxor_one_step_##SUF(int64_t B, int64_t d, int64_t m, const T *X, int64_t sb, int64_t sd,        \
                            int64_t sm, const T *scale, int64_t scb, const T *theta0, int64_t tb,       \
                            const int64_t *support, int64_t ub, const T *eta, int64_t eb, int limit,    \
                            int stop_bad, int fused, int threads, T *theta1, T *theta1t, T *loss, T *g1, \
                            T *h1, int64_t *head, int64_t *headt, int64_t *bad) {                       \
    job_##SUF J = {B, d, m, sb, sd, sm, scb, tb, ub, eb, X, scale, theta0, eta, support, limit,         \
                   stop_bad, fused, theta1, theta1t, loss, g1, h1, head, headt, bad, 0, 0, 0};          \
    int n = threads < 1 ? 1 : threads;                                                                  \
    if (n > B) n = (int)B;                                                                              \
    if (n > MAX_THREADS) n = MAX_THREADS;                                                               \
    run_workers(worker_##SUF, &J, n);                                                                   \
    return J.next < B ? -1 : J.nbad; /* -1: no thread could allocate its workspace */                   \
}                                                                                                       \

DEFINE_STEP(double, f64)
DEFINE_STEP(float, f32)
