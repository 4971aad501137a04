// Inference of the indexing and shape ops: embedding, gather/scatter,
// index_select/index_add, masked_fill, cat, stack, split, topk, sort, one_hot.
#include "infer_test_util.h"

namespace genesis::test {
namespace {

TEST(Embedding, Forward) {
  Result r = run("embedding", {T(GN_BF16, {100, 16}), T(GN_I32, {2, 3})});
  EXPECT_TRUE(has_out(r, 0, GN_BF16, {2, 3, 16}));
  EXPECT_EQ(r.kernel_dtype, GN_BF16);
  EXPECT_EQ(r.in_dtypes[1], GN_I32);  // ids not cast
  EXPECT_TRUE(has_out(run("embedding", {T(GN_F32, {10, 4}), T(GN_I64, {})}), 0, GN_F32, {4}));
  EXPECT_TRUE(fails(run("embedding", {T(GN_F32, {10}), T(GN_I64, {3})}), GN_ERR_SHAPE, "embedding", {"(10)"}));
  EXPECT_TRUE(
      fails(run("embedding", {T(GN_F32, {10, 4}), T(GN_F32, {3})}), GN_ERR_DTYPE, "embedding", {"ids", "float32"}));
  EXPECT_TRUE(fails(run("embedding", {T(GN_F32, {10, 4}), T(GN_BOOL, {3})}), GN_ERR_DTYPE, "embedding", {"bool"}));
  EXPECT_TRUE(fails(run("embedding", {T(GN_F32, {10, 4}), T(GN_I64, {1, 1, 1, 1, 1, 1, 1, 1})}), GN_ERR_SHAPE,
                    "embedding", {"rank 9"}));
}

TEST(Embedding, Backward) {
  Result r = run("embedding_backward", {T(GN_F32, {2, 3, 16}), T(GN_I64, {2, 3})}, {ai("num_weights", 100)});
  EXPECT_TRUE(has_out(r, 0, GN_F32, {100, 16}));
  EXPECT_EQ(r.kernel_dtype, GN_F32);
  EXPECT_TRUE(fails(run("embedding_backward", {T(GN_F32, {3, 16}), T(GN_I64, {3})}, {ai("num_weights", 0)}),
                    GN_ERR_INVALID_ARGUMENT, "embedding_backward", {"num_weights", "0"}));
  EXPECT_TRUE(fails(run("embedding_backward", {T(GN_F32, {3, 16}), T(GN_I64, {4})}, {ai("num_weights", 5)}),
                    GN_ERR_SHAPE, "embedding_backward", {"(3, 16)", "(4)"}));
  EXPECT_TRUE(fails(run("embedding_backward", {T(GN_F32, {3, 16}), T(GN_F32, {3})}, {ai("num_weights", 5)}),
                    GN_ERR_DTYPE, "embedding_backward", {"ids", "float32"}));
  EXPECT_TRUE(fails(run("embedding_backward", {T(GN_F32, {}), T(GN_I64, {})}, {ai("num_weights", 5)}), GN_ERR_SHAPE,
                    "embedding_backward", {"grad", "()"}));
}

TEST(Gather, Shapes) {
  Result r = run("gather", {T(GN_F16, {4, 5}), T(GN_I64, {2, 5})}, {ai("dim", 0)});
  EXPECT_TRUE(has_out(r, 0, GN_F16, {2, 5}));
  EXPECT_EQ(r.kernel_dtype, GN_F16);
  // Along dim 1 the index may be longer than x.
  EXPECT_TRUE(has_out(run("gather", {T(GN_F32, {4, 5}), T(GN_I32, {3, 9})}, {ai("dim", -1)}), 0, GN_F32, {3, 9}));
  // torch: "expected index [3, 3] to be smaller than self [2, 3] apart from dimension 1"
  EXPECT_TRUE(fails(run("gather", {T(GN_F32, {2, 3}), T(GN_I64, {3, 3})}, {ai("dim", 1)}), GN_ERR_SHAPE, "gather",
                    {"index (3, 3)", "x (2, 3)", "dim 0"}));
  EXPECT_TRUE(
      fails(run("gather", {T(GN_F32, {2, 3}), T(GN_I64, {3})}, {ai("dim", 0)}), GN_ERR_SHAPE, "gather", {"rank"}));
  EXPECT_TRUE(fails(run("gather", {T(GN_F32, {2, 3}), T(GN_F32, {2, 3})}, {ai("dim", 0)}), GN_ERR_DTYPE, "gather",
                    {"index", "float32"}));
  EXPECT_TRUE(fails(run("gather", {T(GN_F32, {2, 3}), T(GN_I64, {2, 3})}, {ai("dim", 2)}), GN_ERR_INDEX, "gather",
                    {"dim 2", "rank 2"}));
}

TEST(Scatter, Shapes) {
  Result r = run("scatter_add", {T(GN_F32, {4, 5}), T(GN_I64, {2, 5}), T(GN_BF16, {3, 5})}, {ai("dim", 0)});
  EXPECT_TRUE(has_out(r, 0, GN_F32, {4, 5}));
  EXPECT_EQ(r.in_dtypes[2], GN_F32);  // src cast to x
  EXPECT_EQ(r.in_dtypes[1], GN_I64);
  EXPECT_TRUE(has_out(run("scatter", {T(GN_I32, {4, 5}), T(GN_I64, {4, 7}), T(GN_I32, {4, 8})}, {ai("dim", 1)}), 0,
                      GN_I32, {4, 5}));
  EXPECT_TRUE(fails(run("scatter", {T(GN_F32, {4, 5}), T(GN_I64, {2, 5}), T(GN_F32, {1, 5})}, {ai("dim", 0)}),
                    GN_ERR_SHAPE, "scatter", {"src (1, 5)", "dim 0"}));
  EXPECT_TRUE(fails(run("scatter", {T(GN_F32, {4, 5}), T(GN_I64, {2, 6}), T(GN_F32, {2, 6})}, {ai("dim", 0)}),
                    GN_ERR_SHAPE, "scatter", {"x (4, 5)", "dim 1"}));
  EXPECT_TRUE(fails(run("scatter", {T(GN_F32, {4, 5}), T(GN_I64, {2}), T(GN_F32, {2, 6})}, {ai("dim", 0)}),
                    GN_ERR_SHAPE, "scatter", {"rank"}));
}

TEST(IndexSelect, Shapes) {
  Result r = run("index_select", {T(GN_F32, {3, 4}), T(GN_I64, {5})}, {ai("dim", 1)});
  EXPECT_TRUE(has_out(r, 0, GN_F32, {3, 5}));
  // torch: index_select(ones(3,4), 0, tensor(1)).shape == (1, 4); 0-d x stays 0-d.
  EXPECT_TRUE(has_out(run("index_select", {T(GN_F32, {3, 4}), T(GN_I32, {})}, {ai("dim", 0)}), 0, GN_F32, {1, 4}));
  EXPECT_TRUE(has_out(run("index_select", {T(GN_F32, {}), T(GN_I64, {1})}, {ai("dim", 0)}), 0, GN_F32, {}));
  EXPECT_TRUE(fails(run("index_select", {T(GN_F32, {3, 4}), T(GN_I64, {2, 2})}, {ai("dim", 0)}), GN_ERR_SHAPE,
                    "index_select", {"(2, 2)"}));
  EXPECT_TRUE(fails(run("index_select", {T(GN_F32, {3, 4}), T(GN_I64, {2})}, {ai("dim", -3)}), GN_ERR_INDEX,
                    "index_select", {"dim -3"}));
  EXPECT_TRUE(fails(run("index_select", {T(GN_F32, {3, 4}), T(GN_F32, {2})}, {ai("dim", 0)}), GN_ERR_DTYPE,
                    "index_select", {"index", "float32"}));
  EXPECT_TRUE(fails(run("index_select", {T(GN_F32, {}), T(GN_I64, {2})}, {ai("dim", 0)}), GN_ERR_SHAPE, "index_select",
                    {"0-d", "got 2"}));
}

TEST(IndexAdd, Shapes) {
  Result r = run("index_add", {T(GN_F32, {5, 3}), T(GN_I64, {2}), T(GN_F16, {2, 3})}, {ai("dim", 0)});
  EXPECT_TRUE(has_out(r, 0, GN_F32, {5, 3}));
  EXPECT_EQ(r.in_dtypes[2], GN_F32);
  EXPECT_TRUE(fails(run("index_add", {T(GN_F32, {5, 3}), T(GN_I64, {2}), T(GN_F32, {3, 3})}, {ai("dim", 0)}),
                    GN_ERR_SHAPE, "index_add", {"src shape (3, 3)", "(2, 3)"}));
  EXPECT_TRUE(fails(run("index_add", {T(GN_F32, {5, 3}), T(GN_BOOL, {2}), T(GN_F32, {2, 3})}, {ai("dim", 0)}),
                    GN_ERR_DTYPE, "index_add", {"index"}));
}

TEST(MaskedFill, MaskBroadcastsToX) {
  Result r = run("masked_fill", {T(GN_I32, {2, 4}), T(GN_BOOL, {4})}, {af("value", 1.5)});
  EXPECT_TRUE(has_out(r, 0, GN_I32, {2, 4}));
  EXPECT_EQ(r.kernel_dtype, GN_I32);
  EXPECT_TRUE(fails(run("masked_fill", {T(GN_F32, {2, 4}), T(GN_F32, {4})}, {af("value", 0)}), GN_ERR_DTYPE,
                    "masked_fill", {"float32"}));
  EXPECT_TRUE(fails(run("masked_fill", {T(GN_F32, {2, 4}), T(GN_BOOL, {3})}, {af("value", 0)}), GN_ERR_SHAPE,
                    "masked_fill", {"(3)", "(2, 4)"}));
  EXPECT_TRUE(fails(run("masked_fill", {T(GN_F32, {4}), T(GN_BOOL, {2, 4})}, {af("value", 0)}), GN_ERR_SHAPE,
                    "masked_fill", {"(2, 4)", "(4)"}));
}

TEST(Cat, JoinAndPromote) {
  Result r = run("cat", {T(GN_I32, {2, 3}), T(GN_F32, {4, 3}), T(GN_F16, {0, 3})});
  EXPECT_TRUE(has_out(r, 0, GN_F32, {6, 3}));
  EXPECT_EQ(r.in_dtypes[0], GN_F32);
  EXPECT_EQ(r.in_dtypes[2], GN_F32);
  EXPECT_EQ(r.kernel_dtype, GN_F32);
  EXPECT_TRUE(has_out(run("cat", {T(GN_BF16, {2, 3}), T(GN_BF16, {2, 5})}, {ai("dim", -1)}), 0, GN_BF16, {2, 8}));
  EXPECT_TRUE(has_out(run("cat", {T(GN_U8, {7})}), 0, GN_U8, {7}));
  // torch: "Sizes of tensors must match except in dimension 0"
  EXPECT_TRUE(fails(run("cat", {T(GN_F32, {2, 3}), T(GN_F32, {2, 4})}), GN_ERR_SHAPE, "cat",
                    {"except in dim 0", "input 1 has shape (2, 4)", "(2, 3)"}));
  EXPECT_TRUE(fails(run("cat", {T(GN_F32, {2, 3}), T(GN_F32, {3})}), GN_ERR_SHAPE, "cat", {"rank", "(3)"}));
  EXPECT_TRUE(fails(run("cat", {T(GN_F32, {2}), T(GN_F32, {})}), GN_ERR_SHAPE, "cat", {"input 1", "0-d"}));
  EXPECT_TRUE(fails(run("cat", {T(GN_F32, {2}), T(GN_F32, {2})}, {ai("dim", 1)}), GN_ERR_INDEX, "cat", {"dim 1"}));
}

TEST(Stack, NewDim) {
  Result r = run("stack", {T(GN_F32, {2, 3}), T(GN_I64, {2, 3}), T(GN_F32, {2, 3})}, {ai("dim", -1)});
  EXPECT_TRUE(has_out(r, 0, GN_F32, {2, 3, 3}));
  EXPECT_EQ(r.in_dtypes[1], GN_F32);
  EXPECT_TRUE(has_out(run("stack", {T(GN_F32, {2, 3}), T(GN_F32, {2, 3})}, {ai("dim", 1)}), 0, GN_F32, {2, 2, 3}));
  EXPECT_TRUE(has_out(run("stack", {T(GN_F32, {}), T(GN_F32, {})}), 0, GN_F32, {2}));
  EXPECT_TRUE(has_out(run("stack", {T(GN_F32, {2, 3})}, {ai("dim", 2)}), 0, GN_F32, {2, 3, 1}));
  // torch: "stack expects each tensor to be equal size"
  EXPECT_TRUE(fails(run("stack", {T(GN_F32, {2, 3}), T(GN_F32, {2, 4})}), GN_ERR_SHAPE, "stack",
                    {"input 1 has shape (2, 4)", "(2, 3)"}));
  EXPECT_TRUE(fails(run("stack", {T(GN_F32, {2, 3})}, {ai("dim", 3)}), GN_ERR_INDEX, "stack", {"dim 3", "[-3, 2]"}));
  EXPECT_TRUE(fails(run("stack", {T(GN_F32, {2, 3})}, {ai("dim", -4)}), GN_ERR_INDEX, "stack", {"dim -4"}));
  EXPECT_TRUE(fails(run("stack", {T(GN_F32, {1, 1, 1, 1, 1, 1, 1, 1})}), GN_ERR_SHAPE, "stack", {"rank 9"}));
}

TEST(Split, ChunksAndSizes) {
  Result r = run("split", {T(GN_F32, {5, 2})}, {al("sizes", {2})});
  ASSERT_TRUE(r.ok()) << r.msg;
  ASSERT_EQ(r.out.size(), 3u);
  EXPECT_TRUE(has_out(r, 0, GN_F32, {2, 2}));
  EXPECT_TRUE(has_out(r, 1, GN_F32, {2, 2}));
  EXPECT_TRUE(has_out(r, 2, GN_F32, {1, 2}));
  r = run("split", {T(GN_I8, {3, 6})}, {al("sizes", {1, 0, 5}), ai("dim", -1)});
  ASSERT_EQ(r.out.size(), 3u);
  EXPECT_TRUE(has_out(r, 0, GN_I8, {3, 1}));
  EXPECT_TRUE(has_out(r, 1, GN_I8, {3, 0}));
  EXPECT_TRUE(has_out(r, 2, GN_I8, {3, 5}));
  // torch.split(torch.empty(0), 2) -> one empty part.
  r = run("split", {T(GN_F32, {0})}, {al("sizes", {2})});
  ASSERT_EQ(r.out.size(), 1u);
  EXPECT_TRUE(has_out(r, 0, GN_F32, {0}));
  EXPECT_EQ(run("split", {T(GN_F32, {4})}, {al("sizes", {4})}).out.size(), 1u);
  EXPECT_TRUE(fails(run("split", {T(GN_F32, {4})}, {al("sizes", {1, 2})}), GN_ERR_SHAPE, "split",
                    {"[1, 2] sum to 3", "size 4"}));
  EXPECT_TRUE(fails(run("split", {T(GN_F32, {4})}, {al("sizes", {0})}), GN_ERR_INVALID_ARGUMENT, "split", {"0"}));
  EXPECT_TRUE(fails(run("split", {T(GN_F32, {4})}, {al("sizes", {})}), GN_ERR_INVALID_ARGUMENT, "split", {"empty"}));
  EXPECT_TRUE(
      fails(run("split", {T(GN_F32, {4})}, {al("sizes", {5, -1})}), GN_ERR_INVALID_ARGUMENT, "split", {"negative"}));
  EXPECT_TRUE(fails(run("split", {T(GN_F32, {})}, {al("sizes", {1})}), GN_ERR_SHAPE, "split", {"0-d"}));
  // More parts than outputs: say how many are needed.
  EXPECT_TRUE(fails(run("split", {T(GN_F32, {5})}, {al("sizes", {1})}, 4), GN_ERR_INVALID_ARGUMENT, "split",
                    {"5 parts", "only 4 outputs"}));
}

TEST(TopkSort, Shapes) {
  Result r = run("topk", {T(GN_BF16, {4, 10})}, {ai("k", 3)});
  EXPECT_TRUE(has_out(r, 0, GN_BF16, {4, 3}));
  EXPECT_TRUE(has_out(r, 1, GN_I64, {4, 3}));
  EXPECT_EQ(r.kernel_dtype, GN_BF16);
  EXPECT_TRUE(has_out(run("topk", {T(GN_F32, {4, 10})}, {ai("k", 0), ai("dim", 0)}), 0, GN_F32, {0, 10}));
  EXPECT_TRUE(has_out(run("topk", {T(GN_F32, {})}, {ai("k", 1)}), 1, GN_I64, {}));
  EXPECT_TRUE(
      fails(run("topk", {T(GN_F32, {4, 10})}, {ai("k", 11)}), GN_ERR_INVALID_ARGUMENT, "topk", {"k 11", "[0, 10]"}));
  EXPECT_TRUE(fails(run("topk", {T(GN_F32, {4, 10})}, {ai("k", -1)}), GN_ERR_INVALID_ARGUMENT, "topk", {"k -1"}));
  EXPECT_TRUE(fails(run("topk", {T(GN_F32, {4, 10})}, {ai("k", 1), ai("dim", 2)}), GN_ERR_INDEX, "topk", {"dim 2"}));

  r = run("sort", {T(GN_I32, {3, 4})}, {ai("dim", 0)});
  ASSERT_EQ(r.out.size(), 2u);
  EXPECT_TRUE(has_out(r, 0, GN_I32, {3, 4}));
  EXPECT_TRUE(has_out(r, 1, GN_I64, {3, 4}));
  r = run("argsort", {T(GN_F16, {3, 4})});
  ASSERT_EQ(r.out.size(), 1u);
  EXPECT_TRUE(has_out(r, 0, GN_I64, {3, 4}));
  EXPECT_EQ(r.kernel_dtype, GN_F16);
  EXPECT_TRUE(fails(run("argsort", {T(GN_F16, {3, 4})}, {ai("dim", 5)}), GN_ERR_INDEX, "argsort", {"dim 5"}));
}

TEST(OneHot, Shapes) {
  Result r = run("one_hot", {T(GN_I32, {2, 3})}, {ai("num_classes", 7)});
  EXPECT_TRUE(has_out(r, 0, GN_I64, {2, 3, 7}));
  EXPECT_EQ(r.kernel_dtype, GN_I32);
  EXPECT_TRUE(has_out(run("one_hot", {T(GN_U8, {})}, {ai("num_classes", 2)}), 0, GN_I64, {2}));
  EXPECT_TRUE(fails(run("one_hot", {T(GN_F32, {3})}, {ai("num_classes", 4)}), GN_ERR_DTYPE, "one_hot", {"float32"}));
  EXPECT_TRUE(fails(run("one_hot", {T(GN_BOOL, {3})}, {ai("num_classes", 4)}), GN_ERR_DTYPE, "one_hot", {"bool"}));
  EXPECT_TRUE(fails(run("one_hot", {T(GN_I64, {3})}, {ai("num_classes", 0)}), GN_ERR_INVALID_ARGUMENT, "one_hot",
                    {"num_classes", "0"}));
}

}  // namespace
}  // namespace genesis::test
