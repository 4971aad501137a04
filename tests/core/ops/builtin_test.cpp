// The built-in schema table: every ops.def row parses, in OpId order, with the
// right attribute kinds and defaults; malformed attribute strings are caught.
#include <cmath>
#include <set>
#include <stdexcept>
#include <string>

#include "attr_spec.h"
#include "infer_test_util.h"

namespace genesis::test {
namespace {

using core::builtin_schemas;

// The attribute of op `op` named `name` (nullptr and a failure if absent).
const gn_attr_spec* attr(std::string_view op, std::string_view name) {
  const gn_op_schema& s = schema(op);
  for (size_t i = 0; i < s.n_attrs; ++i)
    if (name == s.attrs[i].name) return &s.attrs[i];
  ADD_FAILURE() << op << " has no attribute " << name;
  return nullptr;
}

std::vector<int64_t> ints_of(const gn_attr_spec* a) {
  return {a->default_value.u.ints.data, a->default_value.u.ints.data + a->default_value.u.ints.size};
}

TEST(BuiltinSchemas, EveryRowParses) {
  const auto& schemas = builtin_schemas();  // throws std::logic_error on a malformed row
  ASSERT_EQ(schemas.size(), static_cast<size_t>(core::kNumBuiltinOps));
  std::set<std::string> names;
  for (const gn_op_schema& s : schemas) {
    SCOPED_TRACE(s.name);
    EXPECT_EQ(s.struct_size, sizeof(gn_op_schema));
    ASSERT_NE(s.name, nullptr);
    EXPECT_TRUE(names.insert(s.name).second) << "duplicate op name";
    EXPECT_NE(s.infer, nullptr);
    ASSERT_NE(s.doc, nullptr);
    EXPECT_GT(std::string(s.doc).size(), 5u);
    EXPECT_GE(s.min_inputs, 0);
    EXPECT_TRUE(s.max_inputs == -1 || s.max_inputs >= s.min_inputs);
    EXPECT_GE(s.max_outputs, -1);
    EXPECT_EQ(s.n_attrs == 0, s.attrs == nullptr);
    for (size_t i = 0; i < s.n_attrs; ++i) {
      const gn_attr_spec& a = s.attrs[i];
      EXPECT_EQ(a.struct_size, sizeof(gn_attr_spec));
      ASSERT_NE(a.name, nullptr);
      EXPECT_GE(a.kind, GN_ATTR_INT);
      EXPECT_LE(a.kind, GN_ATTR_DEVICE);
      EXPECT_EQ(a.default_value.kind, a.kind) << a.name;
      if (a.kind == GN_ATTR_INTS) {
        EXPECT_NE(a.default_value.u.ints.data, nullptr) << a.name;
      }
    }
    // Ops with no tensor inputs take their device from an attribute.
    if (s.flags & GN_OP_NEEDS_DEVICE) {
      ASSERT_GT(s.n_attrs, 0u);
      EXPECT_EQ(s.attrs[s.n_attrs - 1].kind, GN_ATTR_DEVICE);
    }
  }
  // Parsed once: the same table and the same attribute storage every time.
  EXPECT_EQ(&builtin_schemas(), &schemas);
  EXPECT_EQ(builtin_schemas()[0].attrs, schemas[0].attrs);
}

TEST(BuiltinSchemas, OrderIsOpId) {
  const char* expected[] = {
#define GN_OP(name, min_in, max_in, max_out, flags, infer, attrs, doc) #name,
#include "ops.def"
#undef GN_OP
  };
  const auto& schemas = builtin_schemas();
  for (int i = 0; i < core::kNumBuiltinOps; ++i) EXPECT_STREQ(schemas[i].name, expected[i]) << i;
  EXPECT_STREQ(schemas[static_cast<int>(core::OpId::matmul)].name, "matmul");
  EXPECT_STREQ(schemas[static_cast<int>(core::OpId::cast)].name, "cast");
}

TEST(BuiltinSchemas, InferColumnIsWired) {
  EXPECT_EQ(schema("add").infer, &core::infer_binary_arith);
  EXPECT_EQ(schema("div").infer, &core::infer_binary_div);
  EXPECT_EQ(schema("argsort").infer, &core::infer_sort);
  EXPECT_EQ(schema("scaled_dot_product_attention").infer, &core::infer_sdpa);
  EXPECT_EQ(schema("multi_unscale_check_").infer, &core::infer_inplace);
}

TEST(BuiltinSchemas, CountsAndFlags) {
  EXPECT_EQ(schema("cat").max_inputs, -1);
  EXPECT_EQ(schema("split").max_outputs, -1);
  EXPECT_EQ(schema("split").flags, GN_OP_VIEW);
  EXPECT_EQ(schema("rand").flags, GN_OP_NEEDS_DEVICE | GN_OP_RANDOM);
  EXPECT_EQ(schema("bernoulli").flags, GN_OP_RANDOM);
  EXPECT_EQ(schema("fill").flags, GN_OP_INPLACE);
  EXPECT_EQ(schema("fill").max_outputs, 0);
  EXPECT_EQ(schema("layer_norm").min_inputs, 1);
  EXPECT_EQ(schema("layer_norm").max_inputs, 3);
  EXPECT_EQ(schema("layer_norm").max_outputs, 3);
  EXPECT_EQ(schema("neg").n_attrs, 0u);
}

TEST(BuiltinSchemas, SpotCheckDefaults) {
  const gn_attr_spec* dims = attr("sum", "dims");
  ASSERT_NE(dims, nullptr);
  EXPECT_EQ(dims->kind, GN_ATTR_INTS);
  EXPECT_TRUE(dims->has_default);
  EXPECT_EQ(dims->default_value.u.ints.size, 0u);
  EXPECT_EQ(attr("sum", "keepdim")->default_value.u.i, 0);
  EXPECT_EQ(attr("sum", "dtype")->default_value.u.i, GN_DIM_NONE);

  EXPECT_EQ(ints_of(attr("conv2d", "stride")), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(ints_of(attr("conv2d", "padding")), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(attr("conv2d", "groups")->default_value.u.i, 1);
  EXPECT_FALSE(attr("max_pool2d", "kernel")->has_default);
  EXPECT_EQ(ints_of(attr("max_pool2d", "stride")), std::vector<int64_t>{});

  EXPECT_FALSE(attr("arange", "start")->has_default);
  EXPECT_EQ(attr("arange", "start")->kind, GN_ATTR_FLOAT);
  EXPECT_EQ(attr("arange", "step")->default_value.u.f, 1.0);
  EXPECT_EQ(attr("arange", "dtype")->default_value.u.i, GN_DIM_NONE);
  const gn_attr_spec* dev = attr("arange", "device");
  EXPECT_EQ(dev->kind, GN_ATTR_DEVICE);
  EXPECT_EQ(dev->default_value.u.device.type, -1);
  EXPECT_EQ(dev->default_value.u.device.index, 0);

  EXPECT_EQ(attr("full", "dtype")->default_value.u.i, GN_F32);
  EXPECT_FALSE(attr("full", "shape")->has_default);
  EXPECT_EQ(attr("randint", "dtype")->default_value.u.i, GN_I64);
  EXPECT_EQ(attr("clamp", "min")->default_value.u.f, -INFINITY);
  EXPECT_EQ(attr("clamp", "max")->default_value.u.f, INFINITY);
  EXPECT_TRUE(std::isnan(attr("scaled_dot_product_attention", "scale")->default_value.u.f));
  EXPECT_EQ(attr("cross_entropy", "ignore_index")->default_value.u.i, -100);
  EXPECT_DOUBLE_EQ(attr("layer_norm", "eps")->default_value.u.f, 1e-5);
  EXPECT_DOUBLE_EQ(attr("adamw_step", "beta2")->default_value.u.f, 0.999);
  EXPECT_EQ(attr("argmax", "dim")->default_value.u.i, GN_DIM_NONE);
  EXPECT_EQ(attr("softmax", "dim")->default_value.u.i, -1);
  EXPECT_FALSE(attr("sgd_step", "lr")->has_default);
  EXPECT_EQ(attr("norm", "p")->default_value.u.f, 2.0);
}

TEST(AttrSpecParser, AcceptsEveryForm) {
  auto v =
      core::parse_attr_specs("t", "  a:int=-5 b:int=bf16 c:float=-inf d:ints=[3] e:ints=[-1,2,+3] f:str=hi g:device  ");
  ASSERT_EQ(v.size(), 7u);
  EXPECT_STREQ(v[0].name, "a");
  EXPECT_EQ(v[0].default_value.u.i, -5);
  EXPECT_EQ(v[1].default_value.u.i, GN_BF16);
  EXPECT_EQ(v[2].default_value.u.f, -INFINITY);
  EXPECT_EQ(ints_of(&v[3]), std::vector<int64_t>{3});
  EXPECT_EQ(ints_of(&v[4]), (std::vector<int64_t>{-1, 2, 3}));
  EXPECT_STREQ(v[5].default_value.u.s, "hi");
  EXPECT_EQ(v[6].kind, GN_ATTR_DEVICE);
  EXPECT_FALSE(v[6].has_default);
  EXPECT_TRUE(core::parse_attr_specs("t", "").empty());
  EXPECT_TRUE(core::parse_attr_specs("t", nullptr).empty());
  EXPECT_DOUBLE_EQ(core::parse_attr_specs("t", "x:float=2.5e-3")[0].default_value.u.f, 2.5e-3);
}

TEST(AttrSpecParser, MalformedSpecsNameTheOp) {
  const char* bad[] = {
      "x",             // no kind
      "x:integer",     // unknown kind
      "x:int=abc",     // not a number / none / dtype
      "x:int=1.5",     // not an integer
      "x:float=fast",  // not a number
      "x:float=infinity",
      "x:ints=1,2",           // not a list
      "x:ints=[1,a]",         // bad item
      "x:ints=[1,]",          // trailing comma
      "x:device=cuda",        // only 'default'
      ":int",                 // empty name
      "9x:int",               // bad name
      "x:int y:int x:float",  // duplicate
  };
  for (const char* spec : bad) {
    try {
      core::parse_attr_specs("my_op", spec);
      ADD_FAILURE() << "accepted '" << spec << "'";
    } catch (const std::logic_error& e) {
      EXPECT_NE(std::string(e.what()).find("my_op"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace genesis::test
