// bench/gpu/flash/flash_harness.cu - extern "C" entry points over the raw
// flash attention kernels for flash_check.py (ctypes + torch on the GPU machine):
// lets the kernels be checked against torch and timed against SDPA without the
// plugin.  Tensors are contiguous (B,H,S,D); dtype 0 = f16, 1 = bf16.
#define GN_FLASH_TUNING 1  // GENESIS_FLASH_FWD_VARIANT picks forward tilings
#include "../../../backends/cuda/kernels/flash_launch.cuh"

using namespace gn::cuda::flash;

static Params make(const void* q, const void* k, const void* v, int B, int Hq, int Hkv, int Sq, int Sk, int D,
                   int causal, float scale) {
  Params p{};
  p.q = q;
  p.k = k;
  p.v = v;
  p.q_ss = D;
  p.q_sh = (int64_t)Sq * D;
  p.q_sb = (int64_t)Hq * Sq * D;
  p.k_ss = D;
  p.k_sh = (int64_t)Sk * D;
  p.k_sb = (int64_t)Hkv * Sk * D;
  p.v_ss = p.k_ss;
  p.v_sh = p.k_sh;
  p.v_sb = p.k_sb;
  p.o_ss = p.q_ss;
  p.o_sh = p.q_sh;
  p.o_sb = p.q_sb;
  p.do_ss = p.q_ss;
  p.do_sh = p.q_sh;
  p.do_sb = p.q_sb;
  p.dq_ss = p.q_ss;
  p.dq_sh = p.q_sh;
  p.dq_sb = p.q_sb;
  p.dk_ss = p.k_ss;
  p.dk_sh = p.k_sh;
  p.dk_sb = p.k_sb;
  p.dv_ss = p.k_ss;
  p.dv_sh = p.k_sh;
  p.dv_sb = p.k_sb;
  p.B = B;
  p.Hq = Hq;
  p.Hkv = Hkv;
  p.Sq = Sq;
  p.Sk = Sk;
  p.causal = causal != 0;
  p.causal_off = causal == 2 ? Sk - Sq : 0;
  p.scale = scale;
  return p;
}

extern "C" int harness_flash_fwd(const void* q, const void* k, const void* v, void* out, float* lse, int B, int Hq,
                                 int Hkv, int Sq, int Sk, int D, int causal, float scale, int dt, void* stream) {
  Params p = make(q, k, v, B, Hq, Hkv, Sq, Sk, D, causal, scale);
  p.out = out;
  p.lse = lse;
  return (int)flash_fwd(p, (Half16)dt, D, (cudaStream_t)stream);
}

extern "C" int harness_flash_bwd(const void* dout, const void* q, const void* k, const void* v, const void* o,
                                 const float* lse, void* dq, void* dk, void* dv, float* delta, int B, int Hq, int Hkv,
                                 int Sq, int Sk, int D, int causal, float scale, int dt, void* stream) {
  Params p = make(q, k, v, B, Hq, Hkv, Sq, Sk, D, causal, scale);
  p.dout = dout;
  p.o = o;
  p.lse = const_cast<float*>(lse);
  p.dq = dq;
  p.dk = dk;
  p.dv = dv;
  p.delta = delta;
  return (int)flash_bwd(p, (Half16)dt, D, (cudaStream_t)stream);
}
