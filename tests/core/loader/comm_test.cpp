// comm_test.cpp - the gn_comm_* C API (core/src/comm.cpp) over a communicator
// plugin of ABI 1.1 (plugins/old_comm.c): the minor-2 slots are never read
// beyond its struct_size, calls that need them answer GN_ERR_UNSUPPORTED, and
// the core checks every argument before the plugin sees a call.
#include <cstring>
#include <vector>

#include "loader_util.h"

using namespace loader_test;

namespace {

struct CommFree {
  void operator()(gn_comm* c) const { gn_comm_destroy(c); }
};
using Comm = std::unique_ptr<gn_comm, CommFree>;

class CommApi : public ::testing::Test {
 protected:
  void SetUp() override {
    rt_ = create(case_dir("old_comm").c_str());
    ASSERT_TRUE(rt_);
    ASSERT_EQ(gn_device_parse(rt_.get(), "cpu", &cpu_), nullptr);
  }
  gn_comm_config config(int32_t rank, int32_t size, const gn_comm_id* id) {
    gn_comm_config c{};
    c.struct_size = sizeof c;
    c.rank = rank;
    c.world_size = size;
    c.id = id;
    return c;
  }
  Comm make(int32_t rank = 0, int32_t size = 2) {
    gn_comm_id id{};
    std::strcpy(id.bytes, "oldcomm-id");
    gn_comm_config c = config(rank, size, &id);
    gn_comm* out = nullptr;
    Status st(gn_comm_create(rt_.get(), "oldcomm", &c, &out));
    EXPECT_EQ(st, nullptr) << msg(st);
    return Comm(out);
  }
  Tensor tensor(std::vector<float> v, std::vector<int64_t> shape, int32_t dtype = GN_F32) {
    gn_tensor* t = nullptr;
    Status st(dtype == GN_F32
                  ? gn_tensor_from_host(rt_.get(), v.data(), shape.data(), (int32_t)shape.size(), GN_F32, cpu_, &t)
                  : gn_tensor_empty(rt_.get(), shape.data(), (int32_t)shape.size(), dtype, cpu_, &t));
    EXPECT_EQ(st, nullptr) << msg(st);
    return Tensor(t);
  }
  Runtime rt_;
  gn_device cpu_{};
};

void fails(gn_status* raw, int32_t code, std::initializer_list<const char*> words) {
  Status st(raw);
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(gn_status_code(st.get()), code) << msg(st);
  for (const char* w : words) EXPECT_TRUE(contains(msg(st), w)) << "'" << w << "' not in: " << msg(st);
}

}  // namespace

TEST_F(CommApi, AMinorOnePluginIsCreatedFromAnIdAndServesItsSlots) {
  EXPECT_STREQ(gn_comm_backend_for(rt_.get(), "cpu"), "oldcomm");
  EXPECT_EQ(gn_comm_backend_for(rt_.get(), "cuda"), nullptr);
  // Without an id its minor-1 create cannot run (init, which takes a store, is not there).
  gn_comm_config no_id = config(0, 2, nullptr);
  gn_comm* out = nullptr;
  fails(gn_comm_create(rt_.get(), "oldcomm", &no_id, &out), GN_ERR_UNSUPPORTED, {"oldcomm", "config->id"});
  EXPECT_EQ(out, nullptr);
  fails(gn_comm_unique_id(rt_.get(), "oldcomm", reinterpret_cast<gn_comm_id*>(&no_id)), GN_ERR_UNSUPPORTED,
        {"no bootstrap id"});
  Comm c = make(1, 2);
  ASSERT_TRUE(c);
  EXPECT_EQ(gn_comm_rank(c.get()), 1);
  EXPECT_EQ(gn_comm_size(c.get()), 2);
  EXPECT_STREQ(gn_comm_backend(c.get()), "oldcomm");
  Tensor send = tensor({1, 2, 3}, {3}), recv = tensor({0, 0, 0}, {3});
  ASSERT_EQ(Status(gn_comm_all_reduce(c.get(), send.get(), recv.get(), GN_REDUCE_SUM, nullptr)), nullptr);
  float got[3];
  ASSERT_EQ(Status(gn_tensor_to_host(recv.get(), got, sizeof got)), nullptr);
  EXPECT_EQ(got[2], 3.0f);
  // Slots of minor 2 read as absent, never as the poison behind struct_size.
  Tensor a = tensor({1, 2, 3, 4}, {4}), b = tensor({0, 0, 0, 0}, {4});
  fails(gn_comm_all_to_all(c.get(), a.get(), b.get(), nullptr), GN_ERR_UNSUPPORTED,
        {"no all_to_all", "older ABI minor"});
  fails(gn_comm_abort(c.get()), GN_ERR_UNSUPPORTED, {"no abort"});
  fails(gn_comm_send(c.get(), a.get(), 0, 0, nullptr), GN_ERR_UNSUPPORTED, {"no send"});
  EXPECT_EQ(gn_comm_error(c.get()), nullptr);
  EXPECT_EQ(Status(gn_comm_synchronize(c.get(), nullptr, 1000)), nullptr);  // the device's stream sync
  EXPECT_EQ(Status(gn_comm_barrier(c.get(), nullptr)), nullptr);
}

TEST_F(CommApi, EveryCallChecksItsArgumentsBeforeThePluginSeesIt) {
  gn_comm_id id{};
  gn_comm_config bad = config(2, 2, &id);
  gn_comm* out = nullptr;
  fails(gn_comm_create(rt_.get(), "oldcomm", &bad, &out), GN_ERR_INVALID_ARGUMENT, {"rank 2 of world size 2"});
  fails(gn_comm_create(rt_.get(), "nccl-nowhere", &bad, &out), GN_ERR_NOT_FOUND, {"nccl-nowhere", "oldcomm (cpu)"});
  Comm c = make(0, 2);
  Tensor x = tensor({1, 2, 3, 4, 5, 6}, {2, 3}), y3 = tensor({0, 0, 0}, {3}), y6 = tensor({0, 0, 0, 0, 0, 0}, {6});
  fails(gn_comm_all_reduce(c.get(), x.get(), y3.get(), GN_REDUCE_SUM, nullptr), GN_ERR_SHAPE,
        {"gn_comm_all_reduce", "recv", "3 elements, expected 6"});
  Tensor i6 = tensor({}, {6}, GN_I32);
  fails(gn_comm_all_reduce(c.get(), x.get(), i6.get(), GN_REDUCE_SUM, nullptr), GN_ERR_DTYPE, {"float32", "int32"});
  fails(gn_comm_all_reduce(c.get(), x.get(), y6.get(), 7, nullptr), GN_ERR_INVALID_ARGUMENT, {"unknown reduce op 7"});
  gn_tensor* t = nullptr;
  ASSERT_EQ(Status(gn_tensor_transpose(x.get(), 0, 1, &t)), nullptr);
  Tensor xt(t);
  fails(gn_comm_all_reduce(c.get(), xt.get(), xt.get(), GN_REDUCE_SUM, nullptr), GN_ERR_INVALID_ARGUMENT,
        {"send", "(3, 2)", "not contiguous"});
  fails(gn_comm_broadcast(c.get(), x.get(), 5, nullptr), GN_ERR_INDEX, {"root 5", "2-rank"});
  // all_gather: recv = world_size x send; reduce_scatter the other way round.
  fails(gn_comm_all_gather(c.get(), x.get(), y6.get(), nullptr), GN_ERR_SHAPE,
        {"expected 12", "world_size * numel(send)"});
  fails(gn_comm_reduce_scatter(c.get(), y6.get(), y6.get(), GN_REDUCE_SUM, nullptr), GN_ERR_SHAPE,
        {"send", "expected 12"});
  Tensor odd = tensor({1, 2, 3}, {3}), odd2 = tensor({0, 0, 0}, {3});
  fails(gn_comm_all_to_all(c.get(), odd.get(), odd2.get(), nullptr), GN_ERR_SHAPE,
        {"not divisible by the world size 2"});
  fails(gn_comm_send(c.get(), x.get(), 0, 0, nullptr), GN_ERR_INVALID_ARGUMENT, {"peer 0 is this rank"});
  fails(gn_comm_recv(c.get(), x.get(), -1, 0, nullptr), GN_ERR_INDEX, {"peer -1"});
}
