// indexing_test.cpp - embedding, gather/scatter, index_select/index_add,
// masked_fill, one_hot: hand-computed results and the index-out-of-range error path.
#include <cstdint>
#include <string>
#include <vector>

#include "harness.h"

using namespace reftest;

namespace {

// Expect an index error whose message names the op and the bad value.
void expect_index_error(const Status& st, const std::string& op, const std::string& value) {
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(st->code, GN_ERR_INDEX) << st->msg;
  EXPECT_EQ(st->msg.rfind("[" + op + "]", 0), 0u) << st->msg;
  EXPECT_NE(st->msg.find("index " + value), std::string::npos) << st->msg;
}

}  // namespace

// ----------------------------------------------------------------------------
// embedding

TEST(ReferenceIndexing, Embedding) {
  // weight (4,3): w[r][c] = 10r + c
  std::vector<double> wv;
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 3; ++c) wv.push_back(10 * r + c);
  HostTensor w = HostTensor::of(wv, {4, 3}, GN_F32);
  HostTensor ids = HostTensor::of_ints({3, 0, 1, 3}, {2, 2}, GN_I64);
  HostTensor y = HostTensor::zeros({2, 2, 3}, GN_F32);
  ASSERT_OK(run("embedding", GN_F32, {w, ids}, {y}));
  expect_values(y, {30, 31, 32, 0, 1, 2, 10, 11, 12, 30, 31, 32});
  // int32 ids, a transposed (non-contiguous) weight and 0-d ids.
  HostTensor wt = HostTensor::of({0, 10, 20, 30, 1, 11, 21, 31, 2, 12, 22, 32}, {3, 4}, GN_F32).transposed(0, 1);
  HostTensor ids32 = HostTensor::of_ints({2}, {}, GN_I32);
  HostTensor y1 = HostTensor::zeros({3}, GN_F32);
  ASSERT_OK(run("embedding", GN_F32, {wt, ids32}, {y1}));
  expect_values(y1, {20, 21, 22});
  // int64 weights copy exactly.
  const int64_t big = (int64_t(1) << 60) + 7;
  HostTensor wi = HostTensor::of_ints({big, -big}, {2, 1}, GN_I64), yi = HostTensor::zeros({2, 1}, GN_I64);
  ASSERT_OK(run("embedding", GN_I64, {wi, HostTensor::of_ints({1, 0}, {2}, GN_I64)}, {yi}));
  expect_ints(yi, {-big, big});
  expect_index_error(
      run("embedding", GN_F32, {w, HostTensor::of_ints({1, 4}, {2}, GN_I64)}, {HostTensor::zeros({2, 3}, GN_F32)}),
      "embedding", "4");
  expect_index_error(
      run("embedding", GN_F32, {w, HostTensor::of_ints({-1}, {1}, GN_I64)}, {HostTensor::zeros({1, 3}, GN_F32)}),
      "embedding", "-1");
}

TEST(ReferenceIndexing, EmbeddingBackwardAccumulates) {
  HostTensor g = HostTensor::of({1, 2, 3, 4, 5, 6}, {3, 2}, GN_F32);
  HostTensor ids = HostTensor::of_ints({1, 0, 1}, {3}, GN_I32);
  HostTensor gw = HostTensor::of(std::vector<double>(6, 99), {3, 2}, GN_F32);  // overwritten
  ASSERT_OK(run("embedding_backward", GN_F32, {g, ids}, {gw}, {ai(3)}));
  expect_values(gw, {3, 4, 6, 8, 0, 0});
  expect_index_error(run("embedding_backward", GN_F32, {g, HostTensor::of_ints({1, 3, 0}, {3}, GN_I32)}, {gw}, {ai(3)}),
                     "embedding_backward", "3");
}

// ----------------------------------------------------------------------------
// gather / scatter

TEST(ReferenceIndexing, Gather) {
  HostTensor x = HostTensor::of({1, 2, 3, 4, 5, 6}, {2, 3}, GN_F64);
  HostTensor idx = HostTensor::of_ints({2, 0, 1, 1}, {2, 2}, GN_I64);
  HostTensor y = HostTensor::zeros({2, 2}, GN_F64);
  ASSERT_OK(run("gather", GN_F64, {x, idx}, {y}, {ai(1)}));
  expect_values(y, {3, 1, 5, 5});
  HostTensor i0 = HostTensor::of_ints({1, 0, 1}, {1, 3}, GN_I32);
  HostTensor y0 = HostTensor::zeros({1, 3}, GN_F64);
  ASSERT_OK(run("gather", GN_F64, {x, i0}, {y0}, {ai(-2)}));
  expect_values(y0, {4, 2, 6});
  // x.T (3,2) = [[1,4],[2,5],[3,6]] gathered along dim 1.
  ASSERT_OK(
      run("gather", GN_F64, {x.transposed(0, 1), HostTensor::of_ints({1, 0, 0, 1}, {2, 2}, GN_I64)}, {y}, {ai(1)}));
  expect_values(y, {4, 1, 2, 5});
  expect_index_error(run("gather", GN_F64, {x, HostTensor::of_ints({3}, {1, 1}, GN_I64)},
                         {HostTensor::zeros({1, 1}, GN_F64)}, {ai(1)}),
                     "gather", "3");
  expect_index_error(run("gather", GN_F64, {x, HostTensor::of_ints({-1}, {1, 1}, GN_I64)},
                         {HostTensor::zeros({1, 1}, GN_F64)}, {ai(1)}),
                     "gather", "-1");
}

TEST(ReferenceIndexing, ScatterAndScatterAdd) {
  HostTensor x = HostTensor::of({1, 1, 1, 1, 1, 1}, {2, 3}, GN_F32);
  HostTensor idx = HostTensor::of_ints({2, 0, 1, 1}, {2, 2}, GN_I64);
  HostTensor src = HostTensor::of({10, 20, 99, 30, 40, 99}, {2, 3}, GN_F32);  // larger than index: column 2 unused
  HostTensor y = HostTensor::zeros({2, 3}, GN_F32);
  ASSERT_OK(run("scatter_add", GN_F32, {x, idx, src}, {y}, {ai(1)}));
  expect_values(y, {21, 1, 11, 1, 71, 1});
  HostTensor idx0 = HostTensor::of_ints({1, 0, 1}, {1, 3}, GN_I64);
  ASSERT_OK(run("scatter", GN_F32, {x, idx0, src}, {y}, {ai(0)}));
  expect_values(y, {1, 20, 1, 10, 1, 99});
  ASSERT_OK(run("scatter", GN_F32, {x, idx0, HostTensor::scalar(-5, GN_F32)}, {y}, {ai(0)}));  // 0-d src: a value
  expect_values(y, {1, -5, 1, -5, 1, -5});
  EXPECT_EQ(x.values(), std::vector<double>(6, 1.0)) << "x is not modified";
  const int64_t big = (int64_t(1) << 53) + 1;
  HostTensor xi = HostTensor::of_ints({big, 0}, {2}, GN_I64), yi = HostTensor::zeros({2}, GN_I64);
  ASSERT_OK(run("scatter_add", GN_I64,
                {xi, HostTensor::of_ints({0, 0}, {2}, GN_I64), HostTensor::of_ints({1, 1}, {2}, GN_I64)}, {yi},
                {ai(0)}));
  expect_ints(yi, {big + 2, 0});
  expect_index_error(run("scatter", GN_F32, {x, HostTensor::of_ints({3}, {1, 1}, GN_I64), src}, {y}, {ai(1)}),
                     "scatter", "3");
}

// ----------------------------------------------------------------------------
// index_select / index_add

TEST(ReferenceIndexing, IndexSelect) {
  HostTensor x = HostTensor::of({1, 2, 3, 4, 5, 6}, {3, 2}, GN_F32);
  HostTensor y = HostTensor::zeros({3, 2}, GN_F32);
  ASSERT_OK(run("index_select", GN_F32, {x, HostTensor::of_ints({2, 0, 2}, {3}, GN_I64)}, {y}, {ai(0)}));
  expect_values(y, {5, 6, 1, 2, 5, 6});
  HostTensor c = HostTensor::zeros({3, 1}, GN_F32);
  ASSERT_OK(run("index_select", GN_F32, {x, HostTensor::of_ints({1}, {1}, GN_I32)}, {c}, {ai(-1)}));
  expect_values(c, {2, 4, 6});
  HostTensor e = HostTensor::zeros({0, 2}, GN_F32);
  EXPECT_OK(run("index_select", GN_F32, {x, HostTensor::zeros({0}, GN_I64)}, {e}, {ai(0)}));
  expect_index_error(run("index_select", GN_F32, {x, HostTensor::of_ints({0, 3}, {2}, GN_I64)},
                         {HostTensor::zeros({2, 2}, GN_F32)}, {ai(0)}),
                     "index_select", "3");
}

TEST(ReferenceIndexing, IndexAdd) {
  HostTensor x = HostTensor::zeros({3, 2}, GN_F32);
  HostTensor src = HostTensor::of({1, 2, 3, 4, 5, 6}, {3, 2}, GN_F32);
  HostTensor y = HostTensor::zeros({3, 2}, GN_F32);
  ASSERT_OK(run("index_add", GN_F32, {x, HostTensor::of_ints({0, 2, 0}, {3}, GN_I64), src}, {y}, {ai(0), af(2.0)}));
  expect_values(y, {12, 16, 0, 0, 6, 8});
  HostTensor z = HostTensor::of({1, 1, 1, 1, 1, 1}, {2, 3}, GN_F64), yz = HostTensor::zeros({2, 3}, GN_F64);
  ASSERT_OK(run("index_add", GN_F64, {z, HostTensor::of_ints({2}, {1}, GN_I64), HostTensor::of({5, 7}, {2, 1}, GN_F64)},
                {yz}, {ai(1), af(1.0)}));
  expect_values(yz, {1, 1, 6, 1, 1, 8});
  expect_index_error(
      run("index_add", GN_F32, {x, HostTensor::of_ints({0, 5, 0}, {3}, GN_I64), src}, {y}, {ai(0), af(1.0)}),
      "index_add", "5");
}

// ----------------------------------------------------------------------------
// masked_fill, cat, stack

TEST(ReferenceIndexing, MaskedFill) {
  HostTensor x = HostTensor::of({1, 2, 3, 4, 5, 6}, {2, 3}, GN_F32);
  HostTensor y = HostTensor::zeros({2, 3}, GN_F32);
  ASSERT_OK(run("masked_fill", GN_F32, {x, HostTensor::of_ints({1, 0, 1}, {3}, GN_BOOL)}, {y}, {af(-1)}));
  expect_values(y, {-1, 2, -1, -1, 5, -1});
  ASSERT_OK(run("masked_fill", GN_F32, {x, HostTensor::of_ints({0, 1}, {2, 1}, GN_BOOL)}, {y}, {af(-1e30)}));
  expect_values(y, {1, 2, 3, round_to(-1e30, GN_F32), round_to(-1e30, GN_F32), round_to(-1e30, GN_F32)});
  const int64_t big = (int64_t(1) << 60) + 1;
  HostTensor xi = HostTensor::of_ints({big, big}, {2}, GN_I64), yi = HostTensor::zeros({2}, GN_I64);
  ASSERT_OK(run("masked_fill", GN_I64, {xi, HostTensor::of_ints({0, 1}, {2}, GN_BOOL)}, {yi}, {af(3)}));
  expect_ints(yi, {big, 3});
}

TEST(ReferenceIndexing, OneHot) {
  HostTensor ids = HostTensor::of_ints({0, 2, 1, 2}, {2, 2}, GN_I32);
  HostTensor y = HostTensor::of_ints(std::vector<int64_t>(12, 5), {2, 2, 3}, GN_I64);  // overwritten
  ASSERT_OK(run("one_hot", GN_I32, {ids}, {y}, {ai(3)}));
  expect_ints(y, {1, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 1});
  expect_index_error(
      run("one_hot", GN_I32, {HostTensor::of_ints({3}, {1}, GN_I32)}, {HostTensor::zeros({1, 3}, GN_I64)}, {ai(3)}),
      "one_hot", "3");
  expect_index_error(
      run("one_hot", GN_I32, {HostTensor::of_ints({-1}, {1}, GN_I32)}, {HostTensor::zeros({1, 3}, GN_I64)}, {ai(3)}),
      "one_hot", "-1");
}
