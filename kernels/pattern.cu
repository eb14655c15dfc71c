// Deterministic test data for the NCCL backend, generated and checked on the GPU (host-side
// initialisation of multi-GiB buffers is far too slow). Mirrors src/runner/pattern.rs: every
// value is a pure function of (seed, rank, global element index), and reductions are exact in
// any order, so #wrong counts corruption, never rounding.
//
// Build the PTX shipped in kernels/pattern.ptx with scripts/build-ptx (needs nvcc).

#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>

typedef unsigned long long u64;

// Must match crate::collective::Dtype declaration order.
enum { INT8, UINT8, INT32, UINT32, INT64, UINT64, HALF, FLOAT, DOUBLE, BF16, F8E4M3, F8E5M2 };
// Must match crate::collective::RedOp declaration order.
enum { SUM, PROD, MIN, MAX, AVG };
// Must match the kinds passed by src/runner/nccl/kernels.rs.
enum { REDUCTION = 0, REDUCED = 1, COPY = 2, ZERO = 3 };

__device__ __forceinline__ u64 mix(u64 z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

__device__ __forceinline__ u64 hsh(u64 seed, u64 rank, u64 idx) {
  return mix(seed ^ mix(rank * 0x2545f4914f6cdd1dULL ^ mix(idx)));
}

__device__ __forceinline__ int elem_size(int t) {
  switch (t) {
    case INT8: case UINT8: case F8E4M3: case F8E5M2: return 1;
    case HALF: case BF16: return 2;
    case INT32: case UINT32: case FLOAT: return 4;
    default: return 8;
  }
}

__device__ __forceinline__ bool is_float(int t) {
  return t == HALF || t == FLOAT || t == DOUBLE || t == BF16 || t == F8E4M3 || t == F8E5M2;
}

__device__ __forceinline__ bool is_signed(int t) { return t == INT8 || t == INT32 || t == INT64; }

// Largest integer magnitude up to which every integer is exact in the type.
__device__ __forceinline__ double exact_limit(int t) {
  switch (t) {
    case HALF: return 2048.0;
    case BF16: return 256.0;
    case F8E4M3: return 16.0;
    case F8E5M2: return 8.0;
    case FLOAT: return 16777216.0;
    default: return 9007199254740992.0;
  }
}

__device__ __forceinline__ u64 sum_range(int t, u64 n) {
  double r = exact_limit(t) / (2.0 * (double)(n ? n : 1));
  if (r > 64.0) r = 64.0;
  if (r < 1.0) r = 1.0;
  return (u64)r;
}

__device__ __forceinline__ u64 minmax_range(int t) {
  return t == F8E4M3 ? 200 : 1000;
}

__device__ __forceinline__ u64 max_twos(int t) { return t == F8E4M3 ? 6 : 8; }

// Floating input of `rank` for reduction `op`, as an exact double.
__device__ double float_input(int t, int op, u64 h, u64 rank, u64 n, u64 idx) {
  u64 nn = n ? n : 1;
  switch (op) {
    case SUM: {
      u64 r = sum_range(t, n);
      return (double)(long long)(h % (2 * r + 1)) - (double)r;
    }
    case AVG: {
      // Only two ranks contribute, so summation order cannot matter (nccl-tests does the same).
      if (rank != idx % nn && rank != (idx + 1) % nn) return 0.0;
      u64 r = sum_range(t, 2);
      return (double)(long long)(h % (2 * r + 1)) - (double)r;
    }
    case PROD:
      if (rank == idx % nn) return (double)(h % 7 + 1);
      if ((rank + nn - idx % nn) % nn <= max_twos(t) && (h & 1)) return 2.0;
      return 1.0;
    default: {
      u64 q = minmax_range(t);
      return (double)(long long)(h % (2 * q + 1)) - (double)q;
    }
  }
}

__device__ double float_copy(int t, u64 h) {
  if (t == F8E4M3 || t == F8E5M2) return (double)(long long)(h % 64) - 32.0;
  return (double)(long long)(h % 65536) - 32768.0;
}

// Raw bits of double `v` converted (round to nearest even) to float type `t`.
__device__ u64 float_bits(int t, double v) {
  switch (t) {
    case HALF: return (u64)__half_as_ushort(__float2half_rn((float)v));
    case BF16: return (u64)__bfloat16_as_ushort(__float2bfloat16_rn((float)v));
    case F8E4M3: return (u64)__nv_cvt_float_to_fp8((float)v, __NV_SATFINITE, __NV_E4M3);
    case F8E5M2: return (u64)__nv_cvt_float_to_fp8((float)v, __NV_SATFINITE, __NV_E5M2);
    case FLOAT: return (u64)__float_as_uint((float)v);
    default: return (u64)__double_as_longlong(v);
  }
}

// Value of raw bits of float type `t` as a double (for min/max of converted inputs).
__device__ double bits_float(int t, u64 b) {
  switch (t) {
    case HALF: return (double)__half2float(__ushort_as_half((unsigned short)b));
    case BF16: return (double)__bfloat162float(__ushort_as_bfloat16((unsigned short)b));
    case F8E4M3: {
      __half_raw r = __nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)b, __NV_E4M3);
      return (double)__half2float(*(__half *)&r);
    }
    case F8E5M2: {
      __half_raw r = __nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)b, __NV_E5M2);
      return (double)__half2float(*(__half *)&r);
    }
    case FLOAT: return (double)__uint_as_float((unsigned)b);
    default: return __longlong_as_double((long long)b);
  }
}

__device__ __forceinline__ u64 int_mask(int t) {
  int e = elem_size(t);
  return e == 8 ? ~0ULL : ((1ULL << (8 * e)) - 1);
}

// Sign-extended integer value of bits of int type `t`.
__device__ __forceinline__ long long int_signed(int t, u64 b) {
  switch (t) {
    case INT8: return (long long)(signed char)b;
    case INT32: return (long long)(int)b;
    default: return (long long)b;
  }
}

__device__ u64 int_input(int t, int op, u64 h) {
  if (op == PROD) return (h | 1) & int_mask(t);
  if (op == AVG) return (is_signed(t) ? (u64)((long long)(h % 129) - 64) : h % 128) & int_mask(t);
  return h & int_mask(t);
}

// Bits of element `idx` for fill `kind`.
__device__ u64 value(int t, int kind, int op, u64 seed, u64 rank, u64 n, u64 idx) {
  if (kind == ZERO) return 0;
  if (kind == COPY) {
    u64 h = hsh(seed, ~0ULL, idx);
    return is_float(t) ? float_bits(t, float_copy(t, h)) : (h & int_mask(t));
  }
  if (kind == REDUCTION) {
    u64 h = hsh(seed, rank, idx);
    return is_float(t) ? float_bits(t, float_input(t, op, h, rank, n, idx)) : int_input(t, op, h);
  }
  // REDUCED: the reduction over all n ranks.
  if (is_float(t)) {
    double acc = (op == PROD) ? 1.0 : 0.0;
    for (u64 r = 0; r < n; r++) {
      double v = float_input(t, op, hsh(seed, r, idx), r, n, idx);
      if (op == MIN || op == MAX) {
        v = bits_float(t, float_bits(t, v));
        if (r == 0 || (op == MIN ? v < acc : v > acc)) acc = v;
      } else if (op == PROD) {
        acc *= v;
      } else {
        acc += v;
      }
    }
    if (op == AVG) acc /= (double)n;
    return float_bits(t, acc);
  }
  u64 mask = int_mask(t);
  u64 acc = int_input(t, op, hsh(seed, 0, idx));
  for (u64 r = 1; r < n; r++) {
    u64 v = int_input(t, op, hsh(seed, r, idx));
    switch (op) {
      case SUM: case AVG: acc = (acc + v) & mask; break;
      case PROD: acc = (acc * v) & mask; break;
      case MIN:
        if (is_signed(t) ? int_signed(t, v) < int_signed(t, acc) : v < acc) acc = v;
        break;
      default:
        if (is_signed(t) ? int_signed(t, v) > int_signed(t, acc) : v > acc) acc = v;
    }
  }
  if (op == AVG) {
    acc = is_signed(t) ? ((u64)(int_signed(t, acc) / (long long)n) & mask) : (acc / n);
  }
  return acc;
}

__device__ __forceinline__ void store(void *p, u64 i, int e, u64 v) {
  switch (e) {
    case 1: ((unsigned char *)p)[i] = (unsigned char)v; break;
    case 2: ((unsigned short *)p)[i] = (unsigned short)v; break;
    case 4: ((unsigned *)p)[i] = (unsigned)v; break;
    default: ((u64 *)p)[i] = v;
  }
}

__device__ __forceinline__ u64 load(const void *p, u64 i, int e) {
  switch (e) {
    case 1: return ((const unsigned char *)p)[i];
    case 2: return ((const unsigned short *)p)[i];
    case 4: return ((const unsigned *)p)[i];
    default: return ((const u64 *)p)[i];
  }
}

extern "C" __global__ void baton_fill(void *out, u64 count, u64 start, int t, int kind, int op,
                                      u64 seed, u64 rank, u64 n) {
  int e = elem_size(t);
  for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < count;
       i += (u64)gridDim.x * blockDim.x) {
    store(out, i, e, value(t, kind, op, seed, rank, n, start + i));
  }
}

// Counts elements of `got` that differ from the expected pattern: bit-exact, except floating
// avg, which allows 2 units in the last place (the raw-bit distance nccl-tests allows).
extern "C" __global__ void baton_check(const void *got, u64 count, u64 start, int t, int kind,
                                       int op, u64 seed, u64 rank, u64 n, u64 *wrong) {
  int e = elem_size(t);
  u64 tol = (op == AVG && kind == REDUCED && is_float(t)) ? 2 : 0;
  u64 bad = 0;
  for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < count;
       i += (u64)gridDim.x * blockDim.x) {
    u64 a = load(got, i, e), b = value(t, kind, op, seed, rank, n, start + i);
    u64 d = a > b ? a - b : b - a;
    if (d > tol) bad++;
  }
  if (bad) atomicAdd(wrong, bad);
}
