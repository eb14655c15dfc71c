// baton's NCCL device-API implementations (plan `device_api`, nccl-tests -D), compiled to
// kernels/device_api.ptx by scripts/build-ptx-device-api against one NCCL's headers.
//
// The device API is inline device code over a `ncclDevComm` that `ncclDevCommCreate` fills on
// the host and the kernel takes by value, so this PTX carries that NCCL's layouts. `baton_devapi_abi`
// records them; the host refuses to launch when they differ from what it passes, and when the
// loaded NCCL is older than the headers (NCCL only writes a device communicator in the layout of
// a version it knows: the one in `ncclDevCommRequirements.version`, never a newer one).
//
// Implementation 1 of each collective, baton's own code for what nccl-tests' `-D 1` measures:
// every rank's buffers are symmetric windows reachable by load/store (LSA) from every other
// rank, and the CTAs of all ranks meet at an LSA barrier before and after the data moves.

#include <cstddef>
#include <cstdint>
#include <cuda_fp16.h>
#include <nccl.h>
#include <nccl_device.h>

// Read by the host before any launch, in this order: the NCCL_VERSION_CODE of the headers,
// sizeof/alignof(ncclDevComm), sizeof(ncclDevCommRequirements), offsetof its lsaBarrierCount,
// offsetof ncclDevComm's nRanks and lsaSize.
extern "C" __device__ const unsigned long long baton_devapi_abi[7] = {
    NCCL_VERSION_CODE,
    sizeof(ncclDevComm),
    alignof(ncclDevComm),
    sizeof(ncclDevCommRequirements),
    offsetof(ncclDevCommRequirements, lsaBarrierCount),
    offsetof(ncclDevComm, nRanks),
    offsetof(ncclDevComm, lsaSize),
};

template <typename T> __device__ __forceinline__ T zero() { return T(0); }
template <> __device__ __forceinline__ __half zero<__half>() { return __float2half(0.0f); }

// Element e of the result is made by exactly one thread of one rank: the threads of all ranks
// are numbered rank-interleaved per CTA, so each rank's CTA b covers a slice of every stride.
// That thread sums e over every rank's send window and writes the sum into every rank's
// receive window.
template <typename T>
__device__ void allreduce_lsa(ncclWindow_t send, size_t send_off, ncclWindow_t recv, size_t recv_off,
                              size_t count, ncclDevComm const& comm) {
  ncclLsaBarrierSession<ncclCoopCta> bar{ncclCoopCta(), comm, ncclTeamLsa(comm), comm.lsaBarrier, blockIdx.x};
  bar.sync(ncclCoopCta(), cuda::memory_order_acquire);
  const int n = comm.nRanks;
  const size_t first = threadIdx.x + (size_t)blockDim.x * (comm.rank + (size_t)blockIdx.x * n);
  const size_t stride = (size_t)blockDim.x * gridDim.x * n;
  for (size_t e = first; e < count; e += stride) {
    T sum = zero<T>();
    for (int p = 0; p < n; p++) {
      sum += static_cast<const T*>(ncclGetLsaPointer(send, send_off, p))[e];
    }
    for (int p = 0; p < n; p++) {
      static_cast<T*>(ncclGetLsaPointer(recv, recv_off, p))[e] = sum;
    }
  }
  bar.sync(ncclCoopCta(), cuda::memory_order_release);
}

// Each rank pushes its own data: block p of its send buffer (count elements) lands in peer p's
// receive buffer at block `rank`. Threads stride over this rank's elements only.
template <typename T>
__device__ void alltoall_lsa(ncclWindow_t send, size_t send_off, ncclWindow_t recv, size_t recv_off,
                             size_t count, ncclDevComm const& comm) {
  ncclLsaBarrierSession<ncclCoopCta> bar{ncclCoopCta(), comm, ncclTeamLsa(comm), comm.lsaBarrier, blockIdx.x};
  bar.sync(ncclCoopCta(), cuda::memory_order_acquire);
  const int n = comm.nRanks, me = comm.rank;
  const T* mine = static_cast<const T*>(ncclGetLsaPointer(send, send_off, me));
  const size_t stride = (size_t)blockDim.x * gridDim.x;
  for (size_t e = threadIdx.x + (size_t)blockDim.x * blockIdx.x; e < count; e += stride) {
    for (int p = 0; p < n; p++) {
      T* theirs = static_cast<T*>(ncclGetLsaPointer(recv, recv_off, p));
      theirs[(size_t)me * count + e] = mine[(size_t)p * count + e];
    }
  }
  bar.sync(ncclCoopCta(), cuda::memory_order_release);
}

// One entry point per collective and type, named baton_devapi_<collective>_<impl>_<type>.
#define BATON_DEVAPI(T, name)                                                                          \
  extern "C" __global__ void __launch_bounds__(512)                                                   \
      baton_devapi_allreduce_1_##name(ncclWindow_t s, size_t so, ncclWindow_t r, size_t ro, size_t c, \
                                      ncclDevComm comm) {                                             \
    allreduce_lsa<T>(s, so, r, ro, c, comm);                                                          \
  }                                                                                                   \
  extern "C" __global__ void __launch_bounds__(512)                                                   \
      baton_devapi_alltoall_1_##name(ncclWindow_t s, size_t so, ncclWindow_t r, size_t ro, size_t c,  \
                                     ncclDevComm comm) {                                              \
    alltoall_lsa<T>(s, so, r, ro, c, comm);                                                           \
  }

BATON_DEVAPI(int8_t, int8)
BATON_DEVAPI(uint8_t, uint8)
BATON_DEVAPI(int32_t, int32)
BATON_DEVAPI(uint32_t, uint32)
BATON_DEVAPI(int64_t, int64)
BATON_DEVAPI(uint64_t, uint64)
BATON_DEVAPI(__half, half)
BATON_DEVAPI(float, float)
BATON_DEVAPI(double, double)
