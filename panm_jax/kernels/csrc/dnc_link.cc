// The DNC's temporal link and directional weights, forward and VJP, as XLA FFI
// CPU handlers: one sweep over each example's [N, N] link per call.
//
// Equations (Graves et al. 2016, "Hybrid computing using a neural network with
// dynamic external memory", Nature 538, Methods, "Temporal memory linkage"),
// for one write head, L = L_{t-1}, p = p_{t-1}, w = w^w_t, v_r = w^{r,r}_{t-1}:
//
//   Ln[i, j] = (1 - I[i, j]) ((1 - w[i] - w[j]) L[i, j] + w[i] p[j])
//   f[r, i]  = sum_j Ln[i, j] v[r, j]          b[r, j] = sum_i Ln[i, j] v[r, i]
//
// The VJP (its derivation: panm_jax/kernels/_dnc_vjp.py), with cotangents gLn,
// g_f, g_b:
//
//   G[i, j]  = gLn[i, j] + sum_r (g_f[r, i] v[r, j] + v[r, i] g_b[r, j]),  H = (1 - I) o G
//   dL[i, j] = (1 - w[i] - w[j]) H[i, j]
//   dp[j]    = sum_i H[i, j] w[i]
//   dw[k]    = sum_j H[k, j] (p[j] - L[k, j]) - sum_i H[i, k] L[i, k]
//   dv[r, j] = sum_i Ln[i, j] g_f[r, i] + sum_k Ln[j, k] g_b[r, k]
//
// Each handler walks the rows of every example once: a row of L (and of gLn)
// is read from memory once, and every product and reduction of that row is
// done while it is in the L1 cache. Leading axes of L are a batch (jax.vmap
// adds them); examples are shared among the threads of XLA's intra-op pool.

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

// Runs body(e) for e in [0, count): the calling thread and up to `helpers`
// tasks on XLA's pool claim examples from one counter, so the call finishes
// even when no pool thread ever picks a task up (the caller then does it all).
template <typename Body>
void ParallelFor(ffi::ThreadPool& pool, int64_t count, Body body) {
  struct Shared {
    std::atomic<int64_t> next{0};
    std::atomic<int64_t> done{0};
    std::mutex mutex;
    std::condition_variable finished;
  };
  int64_t threads = std::max<int64_t>(1, pool.num_threads());
  int64_t helpers = std::min<int64_t>(threads, count) - 1;
  if (helpers <= 0) {
    for (int64_t e = 0; e < count; ++e) body(e);
    return;
  }
  auto shared = std::make_shared<Shared>();
  auto work = [shared, count, &body]() {
    int64_t mine = 0;
    for (int64_t e; (e = shared->next.fetch_add(1)) < count; ++mine) body(e);
    if (mine > 0 && shared->done.fetch_add(mine) + mine == count) {
      std::lock_guard<std::mutex> lock(shared->mutex);
      shared->finished.notify_all();
    }
  };
  // A helper that starts after every example is claimed touches only `shared`
  // (kept alive by its own copy of the pointer), never `body`.
  for (int64_t h = 0; h < helpers; ++h) {
    pool.Schedule([shared, count, work]() {
      if (shared->next.load() >= count) return;
      work();
    });
  }
  work();
  std::unique_lock<std::mutex> lock(shared->mutex);
  shared->finished.wait(lock, [&] { return shared->done.load() == count; });
}

struct Dims {
  int64_t batch, n, r;
};

ffi::Error CheckDims(const ffi::AnyBuffer& link, const ffi::AnyBuffer& reads, Dims* dims) {
  auto ld = link.dimensions();
  auto rd = reads.dimensions();
  if (ld.size() < 2 || ld[ld.size() - 1] != ld[ld.size() - 2] || rd.size() != ld.size()) {
    return ffi::Error::InvalidArgument("dnc_link: expected link [..., N, N] and read weights [..., R, N]");
  }
  dims->n = ld[ld.size() - 1];
  dims->r = rd[rd.size() - 2];
  dims->batch = 1;
  for (size_t k = 0; k + 2 < ld.size(); ++k) dims->batch *= ld[k];
  return ffi::Error::Success();
}

// Heads are taken four at a time (kHeads) in one pass over a row, so that the
// row is loaded once per four heads; a remainder goes one head per pass.
constexpr int64_t kHeads = 4;

// f[h, i] = sum_j X[j] v[h, j] and b[h, j] += v[h, i] X[j] for K heads h0..h0+K-1, one pass over j.
template <typename T, int K>
void DirectionsPass(const T* X, const T* v, T* b, T* f, int64_t n, int64_t i, int64_t h0) {
  const T* vh[K];
  T* bh[K];
  T vi[K];
  for (int k = 0; k < K; ++k) {
    vh[k] = v + (h0 + k) * n;
    bh[k] = b + (h0 + k) * n;
    vi[k] = vh[k][i];
  }
  T a0 = T(0), a1 = T(0), a2 = T(0), a3 = T(0);
#pragma omp simd reduction(+ : a0, a1, a2, a3)
  for (int64_t j = 0; j < n; ++j) {
    const T x = X[j];
    a0 += x * vh[0][j];
    bh[0][j] += vi[0] * x;
    if constexpr (K > 1) {
      a1 += x * vh[1][j];
      bh[1][j] += vi[1] * x;
      a2 += x * vh[2][j];
      bh[2][j] += vi[2] * x;
      a3 += x * vh[3][j];
      bh[3][j] += vi[3] * x;
    }
  }
  const T a[4] = {a0, a1, a2, a3};
  for (int k = 0; k < K; ++k) f[(h0 + k) * n + i] = a[k];
}

template <typename T>
void ForwardOne(const T* L, const T* p, const T* w, const T* v, T* Ln, T* b, T* f, int64_t n, int64_t r) {
  std::fill(b, b + r * n, T(0));
  for (int64_t i = 0; i < n; ++i) {
    const T wi = w[i], ai = T(1) - w[i];
    const T* Li = L + i * n;
    T* Xi = Ln + i * n;
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) Xi[j] = (ai - w[j]) * Li[j] + wi * p[j];
    Xi[i] = T(0);
    int64_t h = 0;
    for (; h + kHeads <= r; h += kHeads) DirectionsPass<T, 4>(Xi, v, b, f, n, i, h);
    for (; h < r; ++h) DirectionsPass<T, 1>(Xi, v, b, f, n, i, h);
  }
}

// G[j] (+)= sum_k gf[h, i] v[h, j] + v[h, i] gb[h, j] for K heads h0..h0+K-1, one pass over j;
// the first pass starts from gLn's row instead of G.
template <typename T, int K>
void RankPass(const T* start, const T* v, const T* gf, const T* gb, T* G, int64_t n, int64_t i, int64_t h0) {
  const T *vh[K], *gbh[K];
  T cf[K], cv[K];
  for (int k = 0; k < K; ++k) {
    vh[k] = v + (h0 + k) * n;
    gbh[k] = gb + (h0 + k) * n;
    cf[k] = gf[(h0 + k) * n + i];
    cv[k] = vh[k][i];
  }
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) {
    T g = start[j];
    for (int k = 0; k < K; ++k) g += cf[k] * vh[k][j] + cv[k] * gbh[k][j];
    G[j] = g;
  }
}

// dv[h, j] += gf[h, i] X[j] and dv[h, i] += sum_j X[j] gb[h, j] for K heads, one pass over j.
template <typename T, int K>
void ReadsPass(const T* X, const T* gf, const T* gb, T* dv, int64_t n, int64_t i, int64_t h0) {
  const T* gbh[K];
  T* dvh[K];
  T cf[K];
  for (int k = 0; k < K; ++k) {
    gbh[k] = gb + (h0 + k) * n;
    dvh[k] = dv + (h0 + k) * n;
    cf[k] = gf[(h0 + k) * n + i];
  }
  T a0 = T(0), a1 = T(0), a2 = T(0), a3 = T(0);
#pragma omp simd reduction(+ : a0, a1, a2, a3)
  for (int64_t j = 0; j < n; ++j) {
    const T x = X[j];
    dvh[0][j] += cf[0] * x;
    a0 += x * gbh[0][j];
    if constexpr (K > 1) {
      dvh[1][j] += cf[1] * x;
      a1 += x * gbh[1][j];
      dvh[2][j] += cf[2] * x;
      a2 += x * gbh[2][j];
      dvh[3][j] += cf[3] * x;
      a3 += x * gbh[3][j];
    }
  }
  const T a[4] = {a0, a1, a2, a3};
  for (int k = 0; k < K; ++k) dvh[k][i] += a[k];
}

template <typename T>
void BackwardOne(const T* L, const T* p, const T* w, const T* v, const T* gLn, const T* gf, const T* gb, T* dL, T* dp,
                 T* dw, T* dv, T* G, T* X, int64_t n, int64_t r) {
  std::fill(dp, dp + n, T(0));
  std::fill(dw, dw + n, T(0));
  std::fill(dv, dv + r * n, T(0));
  for (int64_t i = 0; i < n; ++i) {
    const T wi = w[i], ai = T(1) - w[i];
    const T* Li = L + i * n;
    const T* gi = gLn + i * n;
    T* dLi = dL + i * n;
    // Row i of G, then H: its diagonal entry removed.
    int64_t h = 0;
    if (r == 0) std::copy(gi, gi + n, G);
    for (; h + kHeads <= r; h += kHeads) RankPass<T, 4>(h == 0 ? gi : G, v, gf, gb, G, n, i, h);
    for (; h < r; ++h) RankPass<T, 1>(h == 0 ? gi : G, v, gf, gb, G, n, i, h);
    G[i] = T(0);
    T row = T(0);
#pragma omp simd reduction(+ : row)
    for (int64_t j = 0; j < n; ++j) {
      const T a = ai - w[j];
      dLi[j] = a * G[j];
      dp[j] += wi * G[j];
      row += G[j] * (p[j] - Li[j]);
      dw[j] -= G[j] * Li[j];
      X[j] = a * Li[j] + wi * p[j];
    }
    dw[i] += row;
    X[i] = T(0);
    for (h = 0; h + kHeads <= r; h += kHeads) ReadsPass<T, 4>(X, gf, gb, dv, n, i, h);
    for (; h < r; ++h) ReadsPass<T, 1>(X, gf, gb, dv, n, i, h);
  }
}

template <typename T>
ffi::Error Forward(ffi::ThreadPool pool, ffi::AnyBuffer link, ffi::AnyBuffer precedence, ffi::AnyBuffer weights,
                   ffi::AnyBuffer reads, ffi::Result<ffi::AnyBuffer> new_link, ffi::Result<ffi::AnyBuffer> backward,
                   ffi::Result<ffi::AnyBuffer> forward) {
  Dims d;
  if (auto err = CheckDims(link, reads, &d); err.failure()) return err;
  const T* L = link.typed_data<T>();
  const T* p = precedence.typed_data<T>();
  const T* w = weights.typed_data<T>();
  const T* v = reads.typed_data<T>();
  T* Ln = new_link->typed_data<T>();
  T* b = backward->typed_data<T>();
  T* f = forward->typed_data<T>();
  const int64_t n = d.n, r = d.r;
  ParallelFor(pool, d.batch, [&](int64_t e) {
    ForwardOne<T>(L + e * n * n, p + e * n, w + e * n, v + e * r * n, Ln + e * n * n, b + e * r * n, f + e * r * n, n,
                  r);
  });
  return ffi::Error::Success();
}

template <typename T>
ffi::Error Backward(ffi::ThreadPool pool, ffi::AnyBuffer link, ffi::AnyBuffer precedence, ffi::AnyBuffer weights,
                    ffi::AnyBuffer reads, ffi::AnyBuffer g_link, ffi::AnyBuffer g_forward, ffi::AnyBuffer g_backward,
                    ffi::Result<ffi::AnyBuffer> d_link, ffi::Result<ffi::AnyBuffer> d_precedence,
                    ffi::Result<ffi::AnyBuffer> d_weights, ffi::Result<ffi::AnyBuffer> d_reads) {
  Dims d;
  if (auto err = CheckDims(link, reads, &d); err.failure()) return err;
  const T* L = link.typed_data<T>();
  const T* p = precedence.typed_data<T>();
  const T* w = weights.typed_data<T>();
  const T* v = reads.typed_data<T>();
  const T* gLn = g_link.typed_data<T>();
  const T* gf = g_forward.typed_data<T>();
  const T* gb = g_backward.typed_data<T>();
  T* dL = d_link->typed_data<T>();
  T* dp = d_precedence->typed_data<T>();
  T* dw = d_weights->typed_data<T>();
  T* dv = d_reads->typed_data<T>();
  const int64_t n = d.n, r = d.r;
  ParallelFor(pool, d.batch, [&](int64_t e) {
    thread_local std::vector<T> scratch;
    if (scratch.size() < static_cast<size_t>(2 * n)) scratch.resize(2 * n);
    BackwardOne<T>(L + e * n * n, p + e * n, w + e * n, v + e * r * n, gLn + e * n * n, gf + e * r * n,
                   gb + e * r * n, dL + e * n * n, dp + e * n, dw + e * n, dv + e * r * n, scratch.data(),
                   scratch.data() + n, n, r);
  });
  return ffi::Error::Success();
}

}  // namespace

namespace {

// The handler of `fn`: XLA's thread pool, then `Args` input buffers and `Rets`
// output buffers (Forward: 4, 3; Backward: 7, 4).
template <int Args, int Rets, typename B, typename Fn>
auto BindTo(B&& binding, Fn fn) {
  if constexpr (Args > 0) {
    return BindTo<Args - 1, Rets>(std::move(binding).template Arg<ffi::AnyBuffer>(), fn);
  } else if constexpr (Rets > 0) {
    return BindTo<0, Rets - 1>(std::move(binding).template Ret<ffi::AnyBuffer>(), fn);
  } else {
    return std::move(binding).To(fn);
  }
}

}  // namespace

#define PANM_HANDLER(symbol, fn, args, rets)                                                              \
  extern "C" XLA_FFI_Error* symbol(XLA_FFI_CallFrame* call_frame) {                                      \
    static auto* handler = BindTo<args, rets>(ffi::Ffi::Bind().Ctx<ffi::ThreadPool>(), fn).release(); \
    return handler->Call(call_frame);                                                                     \
  }

PANM_HANDLER(PanmDncLinkForwardF32, Forward<float>, 4, 3)
PANM_HANDLER(PanmDncLinkForwardF64, Forward<double>, 4, 3)
PANM_HANDLER(PanmDncLinkBackwardF32, Backward<float>, 7, 4)
PANM_HANDLER(PanmDncLinkBackwardF64, Backward<double>, 7, 4)
