// data_test.cpp - IDX round trips (plain, gzip, corrupt), the real
// Fashion-MNIST test set, TensorDataset and DataLoader batching/shuffling.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "genesis/data/dataloader.hpp"
#include "genesis/data/dataset.hpp"
#include "genesis/data/fashion_mnist.hpp"
#include "genesis/data/idx.hpp"

#include "../test_common.h"

using namespace genesis;
using namespace genesis::data;

namespace {

class Data : public ::testing::Test {
 protected:
  void SetUp() override {
    static const bool done = genesis_test::init_reference();
    (void)done;
    dir = "/tmp/genesis_data_test.XXXXXX";
    ASSERT_TRUE(::mkdtemp(dir.data()));
  }
  std::string dir;
};

void write_bytes(const std::string& p, const std::string& b) { std::ofstream(p, std::ios::binary) << b; }

std::shared_ptr<TensorDataset> numbered(int64_t n) {
  Tensor x = arange(n).to(DType::f32).reshape({n, 1}) * 1.0;
  Tensor y = arange(n);
  return std::make_shared<TensorDataset>(std::vector<Tensor>{x, y});
}

}  // namespace

TEST_F(Data, IdxRoundTripEveryType) {
  const std::vector<double> v = {0, 1, 2, 250, 7, 3};
  for (DType d : {DType::u8, DType::i8, DType::i32, DType::f32, DType::f64}) {
    std::vector<double> w = v;
    if (d == DType::i8) w[3] = -100;
    if (d == DType::f32 || d == DType::f64) w[4] = -1.5;
    Tensor t = tensor(w, {2, 3}).to(d);
    for (bool gz : {false, true}) {
      const std::string p = dir + "/t" + std::to_string(int(d)) + (gz ? ".gz" : "");
      write_idx(p, t, gz);
      Tensor r = read_idx(p);
      EXPECT_EQ(r.dtype(), d);
      EXPECT_EQ(r.shape(), (Shape{2, 3}));
      EXPECT_EQ(r.tolist(), w);
    }
  }
}

TEST_F(Data, IdxByteLayoutAndHandMadeGzip) {
  // A file written byte by byte: magic 0x00000803, dims 2x2x2 big-endian, u8 data.
  std::string b = {0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 2, 1, 2, 3, 4, 5, 6, 7, (char)200};
  write_bytes(dir + "/hand", b);
  EXPECT_EQ(read_idx(dir + "/hand").tolist(), (std::vector<double>{1, 2, 3, 4, 5, 6, 7, 200}));
  // Same bytes gzip'd by zlib's own gz writer.
  gzFile f = gzopen((dir + "/hand.gz").c_str(), "wb");
  gzwrite(f, b.data(), static_cast<unsigned>(b.size()));
  gzclose(f);
  EXPECT_EQ(read_idx(dir + "/hand.gz").shape(), (Shape{2, 2, 2}));
  // f32 big-endian: 1.0 = 3F 80 00 00; i32 -2 = FF FF FF FE.
  write_bytes(dir + "/f", std::string{0, 0, 0x0D, 1, 0, 0, 0, 1, 0x3F, (char)0x80, 0, 0});
  EXPECT_EQ(read_idx(dir + "/f").item<double>(), 1.0);
  write_bytes(dir + "/i", std::string{0, 0, 0x0C, 1, 0, 0, 0, 1, (char)0xFF, (char)0xFF, (char)0xFF, (char)0xFE});
  EXPECT_EQ(read_idx(dir + "/i").item<double>(), -2.0);
  write_bytes(dir + "/s", std::string{0, 0, 0x0B, 1, 0, 0, 0, 1, (char)0xFF, (char)0xFE});
  EXPECT_EQ(read_idx(dir + "/s").item<double>(), -2.0);
  // Writer's bytes are the format's.
  write_idx(dir + "/w", tensor(std::vector<double>{1, 2}, {2}).to(DType::u8));
  std::ifstream in(dir + "/w", std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), (std::string{0, 0, 8, 1, 0, 0, 0, 2, 1, 2}));
}

TEST_F(Data, IdxCorruptFiles) {
  auto expect = [&](const std::string& bytes, const std::string& part) {
    const std::string p = dir + "/bad";
    write_bytes(p, bytes);
    try {
      read_idx(p);
      ADD_FAILURE() << "no error for " << part;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
    }
  };
  expect(std::string{0, 0}, "truncated");
  expect(std::string{1, 2, 8, 1, 0, 0, 0, 1, 0}, "bad magic");
  expect(std::string{0, 0, 0x42, 1, 0, 0, 0, 1, 0}, "unknown IDX element type");
  expect(std::string{0, 0, 8, 2, 0, 0, 0, 2}, "truncated");
  expect(std::string{0, 0, 8, 1, 0, 0, 0, 4, 1, 2}, "truncated");
  expect(std::string{0, 0, 8, 1, 0, 0, 0, 1, 1, 2}, "unexpected bytes");
  // A truncated gzip stream.
  write_idx(dir + "/g.gz", zeros({1000}, {.dtype = DType::u8}) + 1, true);
  std::ifstream in(dir + "/g.gz", std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  expect(ss.str().substr(0, ss.str().size() / 2), "");
  EXPECT_THROW(read_idx(dir + "/missing"), Error);
}

// A FIFO (or device) named like a data file is refused at once: opening one
// for reading used to wait for a writer forever.  A second thread opens the
// write side after 5 s so that a regression fails instead of hanging.
TEST_F(Data, IdxRefusesFilesThatAreNotRegular) {
  const std::string fifo = dir + "/train-images-idx3-ubyte";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  genesis_test::FifoRescue rescue(fifo);
  const auto t0 = std::chrono::steady_clock::now();
  std::string what;
  try {
    read_idx(fifo);
  } catch (const Error& e) {
    what = e.what();
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  rescue.release();
  EXPECT_NE(what.find("not a regular file"), std::string::npos) << what;
  EXPECT_NE(what.find(fifo), std::string::npos) << what;
  EXPECT_LT(s, 4.0) << "the reader waited on the FIFO";
}

TEST_F(Data, RealFashionMnistTestSet) {
  if (!FashionMNIST::available(kFashionMNISTDefaultRoot, false))
    GTEST_SKIP() << "Fashion-MNIST not installed under " << kFashionMNISTDefaultRoot;
  FashionMNIST test(kFashionMNISTDefaultRoot, /*train=*/false);
  EXPECT_EQ(test.size(), 10000);
  EXPECT_EQ(test.images().shape(), (Shape{10000, 1, 28, 28}));
  EXPECT_EQ(test.images().dtype(), DType::f32);
  EXPECT_EQ(test.labels().dtype(), DType::i64);
  EXPECT_GE(test.images().min().item<double>(), 0.0);
  EXPECT_LE(test.images().max().item<double>(), 1.0);
  EXPECT_EQ(test.images().max().item<double>(), 1.0);
  std::vector<int> hist(10, 0);
  for (double l : test.labels().tolist()) hist.at(static_cast<size_t>(l))++;
  for (int c = 0; c < 10; ++c) EXPECT_EQ(hist[c], 1000) << FashionMNIST::classes()[c];
  Example e = test.get(0);
  EXPECT_EQ(e[0].shape(), (Shape{1, 28, 28}));
  EXPECT_EQ(e[1].dim(), 0);
  FashionMNIST flat(kFashionMNISTDefaultRoot, false, {.flatten = true});
  EXPECT_EQ(flat.images().shape(), (Shape{10000, 784}));
  DataLoader loader(std::make_shared<FashionMNIST>(flat), {.batch_size = 256, .shuffle = true, .seed = 1});
  EXPECT_EQ(loader.size(), 40);
  const Example b = *loader.begin();
  EXPECT_EQ(b[0].shape(), (Shape{256, 784}));
  EXPECT_EQ(b[1].shape(), (Shape{256}));
  try {
    FashionMNIST("/nonexistent", true);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("train-images-idx3-ubyte"), std::string::npos) << e.what();
  }
}

TEST_F(Data, TensorDatasetAndCollate) {
  auto ds = numbered(10);
  EXPECT_EQ(ds->size(), 10);
  Example e = ds->get(3);
  EXPECT_EQ(e[0].tolist(), (std::vector<double>{3}));
  EXPECT_EQ(e[1].item<double>(), 3);
  Example b = ds->get_batch({4, 1, 7});
  EXPECT_EQ(b[1].tolist(), (std::vector<double>{4, 1, 7}));
  EXPECT_EQ(b[0].shape(), (Shape{3, 1}));
  Example c = collate({ds->get(4), ds->get(1), ds->get(7)});  // the generic path agrees
  EXPECT_EQ(c[0].tolist(), b[0].tolist());
  EXPECT_EQ(c[1].tolist(), b[1].tolist());
  EXPECT_THROW(ds->get(10), Error);
  EXPECT_THROW(TensorDataset({zeros({3}), zeros({4})}), Error);
}

TEST_F(Data, DataLoaderBatchingAndDropLast) {
  auto ds = numbered(10);
  DataLoader l(ds, {.batch_size = 4});
  EXPECT_EQ(l.size(), 3);
  std::vector<double> seen;
  std::vector<int64_t> sizes;
  for (const Example& b : l) {
    sizes.push_back(b[1].numel());
    for (double v : b[1].tolist()) seen.push_back(v);
  }
  EXPECT_EQ(sizes, (std::vector<int64_t>{4, 4, 2}));
  EXPECT_EQ(seen, (std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  DataLoader d(ds, {.batch_size = 4, .drop_last = true});
  EXPECT_EQ(d.size(), 2);
  EXPECT_EQ(d.num_examples(), 8);
  int n = 0;
  for (const Example& b : d) {
    EXPECT_EQ(b[0].shape(), (Shape{4, 1}));
    ++n;
  }
  EXPECT_EQ(n, 2);
  EXPECT_THROW(DataLoader(ds, {.batch_size = 0}), Error);
}

TEST_F(Data, ShuffleIsReproducibleAndResumable) {
  auto ds = numbered(100);
  DataLoader a(ds, {.batch_size = 16, .shuffle = true, .seed = 42});
  DataLoader b(ds, {.batch_size = 16, .shuffle = true, .seed = 42});
  DataLoader c(ds, {.batch_size = 16, .shuffle = true, .seed = 43});
  const auto e0 = a.indices(0), e1 = a.indices(1);
  std::vector<int64_t> s = e0;
  std::sort(s.begin(), s.end());
  for (int i = 0; i < 100; ++i) ASSERT_EQ(s[i], i);
  EXPECT_NE(e0, e1);
  EXPECT_NE(e0, c.indices(0));
  // Global RNG use in between changes nothing: the order depends only on (seed, epoch).
  manual_seed(7);
  (void)rand({1000});
  EXPECT_EQ(b.indices(1), e1);
  // Iteration follows indices(epoch) and advances the epoch.
  std::vector<double> got;
  for (const Example& x : a)
    for (double v : x[1].tolist()) got.push_back(v);
  EXPECT_EQ(got, std::vector<double>(e0.begin(), e0.end()));
  EXPECT_EQ(a.epoch(), 1);
  // Resume at epoch 1, batch 3.
  b.set_epoch(1);
  b.set_start_batch(3);
  std::vector<double> rest;
  for (const Example& x : b)
    for (double v : x[1].tolist()) rest.push_back(v);
  EXPECT_EQ(rest, std::vector<double>(e1.begin() + 48, e1.end()));
  EXPECT_EQ(b.batch(1, 3)[1].tolist(), std::vector<double>(e1.begin() + 48, e1.begin() + 64));
}

TEST_F(Data, HostBatchGatherMatchesIndexSelect) {
  // get_batch copies rows of dense host tensors itself; it must agree with the
  // index_select op for every dtype and row shape, and views take the op path.
  const std::vector<int64_t> idx = {5, 0, 5, 2, 7};
  Tensor sel = tensor(idx, {5});
  for (DType d : {DType::f32, DType::f64, DType::u8, DType::i64, DType::bf16}) {
    Tensor x = (arange(8 * 3 * 2).reshape({8, 3, 2}) * 3).to(d);
    Tensor y = arange(8) * 10;
    TensorDataset ds({x, y});
    Example b = ds.get_batch(idx);
    EXPECT_EQ(b[0].dtype(), d);
    EXPECT_EQ(b[0].shape(), (Shape{5, 3, 2}));
    EXPECT_EQ(b[0].tolist(), index_select(x, 0, sel).tolist());
    EXPECT_EQ(b[1].tolist(), (std::vector<double>{50, 0, 50, 20, 70}));
  }
  Tensor t = arange(24).reshape({4, 6}).to(DType::f32).t();  // (6, 4), not contiguous
  TensorDataset view({t});
  EXPECT_EQ(view.get_batch({3, 1})[0].tolist(), (std::vector<double>{3, 9, 15, 21, 1, 7, 13, 19}));
  EXPECT_THROW(view.get_batch({6}), Error);
  EXPECT_THROW(view.get_batch({-1}), Error);
}
