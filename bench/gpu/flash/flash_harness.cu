// bench/gpu/flash/flash_harness.cu - extern "C" entry points over the raw
// flash attention kernels for flash_check.py (ctypes + torch on the GPU machine):
// lets the kernels be checked against torch and timed against SDPA without the
// plugin.  Tensors are contiguous (B,H,S,D); dtype 0 = f16, 1 = bf16.
#define GN_FLASH_TUNING 1  // GENESIS_FLASH_FWD_VARIANT picks forward tilings
#include "../../../backends/cuda/kernels/flash_launch.cuh"

using namespace gn::cuda::flash;

// Row, head and batch strides of a contiguous (B, H, S, D) tensor.
static void dense_strides(int64_t& ss, int64_t& sh, int64_t& sb, int H, int S, int D) {
  ss = D;
  sh = (int64_t)S * D;
  sb = (int64_t)H * S * D;
}

static Params make(const void* q, const void* k, const void* v, int B, int Hq, int Hkv, int Sq, int Sk, int D,
                   int causal, float scale) {
  Params p{};
  p.q = q;
  p.k = k;
  p.v = v;
  // dense (B, H, S, D) operands: q, o, dout and dq are (B, Hq, Sq, D), k, v, dk and dv (B, Hkv, Sk, D)
  dense_strides(p.q_ss, p.q_sh, p.q_sb, Hq, Sq, D);
  dense_strides(p.k_ss, p.k_sh, p.k_sb, Hkv, Sk, D);
  dense_strides(p.v_ss, p.v_sh, p.v_sb, Hkv, Sk, D);
  dense_strides(p.o_ss, p.o_sh, p.o_sb, Hq, Sq, D);
  dense_strides(p.do_ss, p.do_sh, p.do_sb, Hq, Sq, D);
  dense_strides(p.dq_ss, p.dq_sh, p.dq_sb, Hq, Sq, D);
  dense_strides(p.dk_ss, p.dk_sh, p.dk_sb, Hkv, Sk, D);
  dense_strides(p.dv_ss, p.dv_sh, p.dv_sb, Hkv, Sk, D);
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
