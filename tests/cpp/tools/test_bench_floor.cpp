// CPU tests of the benchmark's arithmetic (floors, bytes, FLOP), token sampling and result file.
// Expected values are computed by hand in the comments.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "../../../tools/bench_check.h"
#include "../../../tools/bench_floor.h"
#include "../../../tools/bench_json.h"
#include "../../../tools/bench_report.h"

namespace servekit::bench {
namespace {

QuantConfig q(QuantMethod m, int group = 128) {
  QuantConfig c;
  c.method = m;
  c.group_size = group;
  return c;
}

// DeepSeek-V3 shapes (BENCH.md): E 256, top-8, 1 shared, H 7168, I 2048, SwiGLU, sigmoid+bias.
MoEConfig deepseek(QuantMethod m) {
  MoEConfig c;
  c.routing.num_experts = 256;
  c.routing.top_k = 8;
  c.routing.method = RoutingMethod::kDeepSeekV3;
  c.experts.hidden_size = 7168;
  c.experts.intermediate_size = 2048;
  c.experts.local_num_experts = 256;
  c.experts.num_shared_experts = 1;
  c.quant = q(m);
  return c;
}

TEST(BenchFloor, WeightMatrixBytesPerFormat) {
  // A 256 x 256 matrix: 65536 values.
  EXPECT_EQ(weight_matrix_bytes(q(QuantMethod::kBF16), 256, 256), 131072);         // 2 B each
  EXPECT_EQ(weight_matrix_bytes(q(QuantMethod::kFP8PerTensor), 256, 256), 65540);  // + 4 B scale
  // 2 x 2 blocks of 128 x 128, one f32 each: 65536 + 16.
  EXPECT_EQ(weight_matrix_bytes(q(QuantMethod::kFP8Block128), 256, 256), 65552);
  // 300 rows round up to 3 row blocks: 300 * 256 + 3 * 2 * 4 = 76800 + 24.
  EXPECT_EQ(weight_matrix_bytes(q(QuantMethod::kFP8Block128), 300, 256), 76824);
  // 4-bit: 32768 B of codes; mxfp4 one ue8m0 per 32: 256 * 8 = 2048.
  EXPECT_EQ(weight_matrix_bytes(q(QuantMethod::kMXFP4W4A16), 256, 256), 34816);
  EXPECT_EQ(weight_matrix_bytes(q(QuantMethod::kMXFP4W4A8), 256, 256), 34816);
  // nvfp4: one e4m3 per 16 (256 * 16 = 4096) + the f32 tensor scale: 32768 + 4096 + 4.
  EXPECT_EQ(weight_matrix_bytes(q(QuantMethod::kNVFP4W4A16), 256, 256), 36868);
  // int4 group 64: 256 * 4 bf16 scales = 2048 B.
  EXPECT_EQ(weight_matrix_bytes(q(QuantMethod::kInt4W4A16, 64), 256, 256), 34816);
}

TEST(BenchFloor, ExpertBytesDeepSeekAndBiases) {
  // W13 [4096, 7168] + W2 [7168, 2048] bf16: 58,720,256 + 29,360,128.
  EXPECT_EQ(expert_bytes(deepseek(QuantMethod::kBF16), false), 88080384);
  // + fp32 biases [4096] and [7168]: 4 * 11264 = 45,056.
  EXPECT_EQ(expert_bytes(deepseek(QuantMethod::kBF16), true), 88080384 + 45056);
  // fp8_block128: 29,360,128 + 14,680,064 codes; scales 32*56*4 + 56*16*4 = 7168 + 3584.
  EXPECT_EQ(expert_bytes(deepseek(QuantMethod::kFP8Block128), false), 44040192 + 10752);
}

TEST(BenchFloor, FlopGatedRelu2AndShared) {
  MoEConfig c;
  c.routing.top_k = 2;
  c.experts.hidden_size = 128;
  c.experts.intermediate_size = 256;
  c.experts.num_shared_experts = 1;
  c.activation = Activation::kSwiGLU;
  // 2 * T3 * K2 * 3 * 128 * 256 = 1,179,648
  EXPECT_DOUBLE_EQ(floor_flop(c, 3), 1179648.0);
  // routed + shared rows: 2 * 3 * (2 + 1) * 3 * 128 * 256 = 1,769,472
  EXPECT_DOUBLE_EQ(executed_flop(c, 3), 1769472.0);
  c.activation = Activation::kReLU2;  // W13 has I rows: 2 * 3 * 2 * 2 * 128 * 256 = 786,432
  EXPECT_DOUBLE_EQ(floor_flop(c, 3), 786432.0);
}

TEST(BenchFloor, TensorCoreRateFollowsTheMathFormat) {
  const Ceilings c;
  EXPECT_EQ(tensor_core_TFLOPs(QuantMethod::kBF16, c), 783.0);
  EXPECT_EQ(tensor_core_TFLOPs(QuantMethod::kFP8PerTensor, c), 1432.0);
  EXPECT_EQ(tensor_core_TFLOPs(QuantMethod::kFP8Block128, c), 1432.0);
  EXPECT_EQ(tensor_core_TFLOPs(QuantMethod::kMXFP4W4A8, c), 1432.0);
  EXPECT_EQ(tensor_core_TFLOPs(QuantMethod::kMXFP4W4A16, c), 783.0);
  EXPECT_EQ(tensor_core_TFLOPs(QuantMethod::kNVFP4W4A16, c), 783.0);
  EXPECT_EQ(tensor_core_TFLOPs(QuantMethod::kInt4W4A16, c), 783.0);
}

TEST(BenchFloor, DeepSeekOneTokenIsMemoryBound) {
  const Floor f = moe_floor(deepseek(QuantMethod::kBF16), 1, 8, false, Ceilings{});
  // 8 touched + 1 shared expert: 9 * 88,080,384 = 792,723,456 B.
  EXPECT_DOUBLE_EQ(f.weight_bytes, 792723456.0);
  // hidden 7168*2 + logits 256*4 + out 7168*2 + correction bias 256*4 = 30,720 B.
  EXPECT_DOUBLE_EQ(f.activation_bytes, 30720.0);
  // 792,754,176 B / 4.58e12 B/s = 173.0904 us.
  EXPECT_NEAR(f.memory_us, 173.0904, 1e-3);
  // 2 * 1 * 8 * 3 * 7168 * 2048 = 704,643,072 FLOP / 783e12 = 0.89993 us.
  EXPECT_NEAR(f.compute_us, 0.89993, 1e-4);
  EXPECT_DOUBLE_EQ(f.floor_us, f.memory_us);
}

TEST(BenchFloor, DeepSeekLargeBatchIsComputeBound) {
  const Floor f = moe_floor(deepseek(QuantMethod::kFP8Block128), 8192, 256, false, Ceilings{});
  // 2 * 8192 * 8 * 3 * 7168 * 2048 = 5,772,436,045,824 FLOP / 1432e12 = 4031.03 us.
  EXPECT_NEAR(f.compute_us, 4031.03, 0.01);
  // 257 * 44,050,944 B + 8192 * (7168*4 + 256*4) + 1024 = 11,321,092,608 + 243,269,632 + 1024
  // = 11,564,363,264 B / 4.58e12 = 2524.97 us.
  EXPECT_NEAR(f.memory_us, 2524.97, 0.01);
  EXPECT_DOUBLE_EQ(f.floor_us, f.compute_us);
}

TEST(BenchFloor, CountTouchedExperts) {
  // Local experts [2, 8): ids 3 and 5 are local (5 twice), 9 and -1 are not.
  const int32_t ids[] = {3, 5, 3, -1, 9, 5};
  EXPECT_EQ(count_touched_experts(ids, 3, 2, 2, 6), 2);
  EXPECT_EQ(count_touched_experts(ids, 3, 2, 0, 10), 3);  // 3, 5, 9
}

TEST(BenchFloor, ExpertRowStats) {
  // Local experts [2, 6): rows 2 (id 3), 0, 3 (id 5), 0; 9 and -1 are not local. Mean 1.25,
  // variance (0.5625 + 1.5625 + 3.0625 + 1.5625) / 4 = 1.6875.
  const int32_t ids[] = {3, 5, 3, -1, 9, 5, 5, 9};
  const ExpertRows r = expert_row_stats(ids, 4, 2, 2, 4);
  EXPECT_EQ(r.max, 3);
  EXPECT_NEAR(r.sd, std::sqrt(1.6875), 1e-12);
  EXPECT_EQ(expert_row_stats(ids, 4, 2, 2, 0).max, 0);
  // Balanced: every expert the same rows, sd 0.
  const int32_t even[] = {0, 1, 2, 3, 0, 1, 2, 3};
  EXPECT_EQ(expert_row_stats(even, 4, 2, 0, 4).sd, 0.0);
}

TEST(BenchCheck, SampleTokensSpreadEvenly) {
  EXPECT_EQ(sample_tokens(3, 64), (std::vector<int64_t>{0, 1, 2}));
  // j * 99 / 4 for j = 0..4: 0, 24, 49, 74, 99.
  EXPECT_EQ(sample_tokens(100, 5), (std::vector<int64_t>{0, 24, 49, 74, 99}));
  EXPECT_EQ(sample_tokens(100, 1), (std::vector<int64_t>{0}));
  const auto s = sample_tokens(8192, 64);
  ASSERT_EQ(s.size(), 64u);
  EXPECT_EQ(s.back(), 8191);
  for (size_t i = 1; i < s.size(); ++i) EXPECT_GT(s[i], s[i - 1]);
}

TEST(BenchJson, NestingEscapingAndNonFinite) {
  JsonWriter w;
  w.begin_object();
  w.key("s").value("a\"b\\c\n\x01");
  w.key("n").value(1.5).key("i").value(int64_t{-3}).key("b").value(true);
  w.key("nan").value(std::nan("")).key("inf").value(INFINITY);
  w.key("a").begin_array().value(1).null().begin_object().end_object().end_array();
  w.end_object();
  EXPECT_EQ(w.str(),
            "{\"s\":\"a\\\"b\\\\c\\n\\u0001\",\"n\":1.5,\"i\":-3,\"b\":true,\"nan\":null,"
            "\"inf\":null,\"a\":[1,null,{}]}");
}

TEST(BenchJson, NestingUpToTheFixedDepth) {
  JsonWriter w;
  for (int i = 0; i < JsonWriter::kMaxDepth; ++i) w.begin_array();
  EXPECT_THROW(w.begin_array(), Error);  // one more than the stack holds
  EXPECT_THROW(w.begin_object(), Error);
  for (int i = 0; i < JsonWriter::kMaxDepth; ++i) w.end_array();
  EXPECT_EQ(w.str(),
            std::string(JsonWriter::kMaxDepth, '[') + std::string(JsonWriter::kMaxDepth, ']'));
  EXPECT_THROW(w.end_array(), Error);  // nothing open
}

TEST(BenchJson, MisuseThrows) {
  JsonWriter w;
  w.begin_object();
  EXPECT_THROW(w.value(1), Error);  // a value in an object needs a key
  EXPECT_THROW(w.str(), Error);     // still open
  EXPECT_THROW(w.end_array(), Error);
  w.key("k");
  EXPECT_THROW(w.key("k2"), Error);  // two keys in a row
}

TEST(BenchReport, ResultFileHasTheShapeOfBenchMd) {
  RunInfo info;
  info.commit = "abc123";
  info.date = "2026-11-30";
  info.device = "NVIDIA H200";
  BenchRow r;
  r.preset = "deepseek-v3";
  r.quant = "fp8_block128";
  r.tokens = 8;
  r.routing = "uniform";
  r.path = "static";
  r.us = 200.0;
  r.floor.floor_us = 100.0;
  r.flop = 4e9;
  r.peer = "cublas_grouped";
  r.peer_us = 300.0;
  r.rel_l2 = 0.01;
  const std::string j = results_json(info, {r, r});
  EXPECT_NE(j.find("{\n \"commit\":\"abc123\",\"date\":\"2026-11-30\",\"device\":\"NVIDIA H200\""),
            std::string::npos);
  EXPECT_NE(j.find("\"ceilings\":{\"read_TBps\":4.58,\"copy_TBps\":4.3,\"bf16_TFLOPs\":783,"
                   "\"fp8_TFLOPs\":1432}"),
            std::string::npos);
  // The fields of BENCH.md first, in its order, then ours: ratio = 200 / 100, TFLOP/s =
  // 4e9 / 200e-6 / 1e12 = 20, speedup = 300 / 200.
  const std::string row =
      "{\"op\":\"moe\",\"preset\":\"deepseek-v3\",\"quant\":\"fp8_block128\",\"tokens\":8,"
      "\"routing\":\"uniform\",\"path\":\"static\",\"us\":200,\"floor_us\":100,"
      "\"peer\":\"cublas_grouped\",\"peer_us\":300,\"rel_l2\":0.01,\"ratio\":2,\"tflops\":20,"
      "\"speedup_vs_peer\":1.5,\"peer_ratio\":3,\"peer_rel_l2\":null,\"peer_tolerance\":null,"
      "\"status\":\"ok\"";
  const size_t first = j.find("\"rows\":[\n " + row);
  ASSERT_NE(first, std::string::npos) << j;
  EXPECT_NE(j.find("},\n " + row, first), std::string::npos) << "one row per line";
  EXPECT_EQ(j.substr(j.size() - 5), "\n]\n}\n");
  EXPECT_EQ(j.find("group_size"), std::string::npos) << "only int4 rows carry a group size";
  EXPECT_NE(j.find(",\"touched_experts\":0,\"expert_rows_max\":0,\"expert_rows_sd\":0,"),
            std::string::npos)
      << j;
  // The one-node graph's time: null until the GPU run measured it, then the number.
  EXPECT_NE(j.find("\"one_node_graph_us\":null"), std::string::npos) << j;
  info.one_node_graph_us = 6.5;
  EXPECT_NE(results_json(info, {r}).find("\"one_node_graph_us\":6.5"), std::string::npos);
  BenchRow q = r;
  q.quant = "int4_w4a16";
  q.group_size = 32;
  EXPECT_NE(results_json(info, {q}).find(",\"group_size\":32"), std::string::npos);
  // What the layer ran (MoELayer::kernels), when the row has it, after the check fields.
  EXPECT_EQ(j.find("\"kernels\""), std::string::npos);
  q.kernels = "dynamic: gemm1 256x144x64 swap-AB cooperative cluster 1x2";
  EXPECT_NE(results_json(info, {q}).find(
                ",\"kernels\":\"dynamic: gemm1 256x144x64 swap-AB cooperative cluster 1x2\"}"),
            std::string::npos);
}

TEST(BenchReport, TableLineShowsDashesForMissingNumbers) {
  BenchRow r;
  r.preset = "tiny";
  r.quant = "bf16";
  r.tokens = 33;
  r.routing = "skewed";
  r.path = "auto";
  r.status = "skipped";
  const std::string line = table_line(r);
  EXPECT_NE(line.find("tiny"), std::string::npos);
  EXPECT_NE(line.find(" - "), std::string::npos);
  EXPECT_NE(line.find("skipped"), std::string::npos);
  EXPECT_EQ(table_header().find("preset"), 0u);
}

// A row's verdict: over the gate (or NaN: an output never written) or non-deterministic fails; a
// dynamic-path row under SERVEKIT_DIAG_DYNAMIC_STOP is "stopped" whatever its check says (its
// output is incomplete by design), and the variable does not touch rows that ran the static path.
TEST(BenchReport, RowVerdict) {
  EXPECT_EQ(row_verdict(1e-3, 1e-2, true, 0, true).status, "ok");
  EXPECT_TRUE(row_verdict(1e-3, 1e-2, true, 0, true).error.empty());
  const RowVerdict over = row_verdict(2e-2, 1e-2, true, 0, true);
  EXPECT_EQ(over.status, "fail");
  EXPECT_NE(over.error.find("2.000e-02 exceeds 1.000e-02"), std::string::npos) << over.error;
  EXPECT_EQ(row_verdict(std::nan(""), 1e-2, true, 0, false).status, "fail");
  EXPECT_EQ(row_verdict(1e-3, 1e-2, false, 0, true).status, "fail");
  const RowVerdict stopped = row_verdict(std::nan(""), 1e-2, false, 3, true);
  EXPECT_EQ(stopped.status, "stopped");
  EXPECT_NE(stopped.error.find("SERVEKIT_DIAG_DYNAMIC_STOP=3"), std::string::npos);
  EXPECT_EQ(row_verdict(1e-3, 1e-2, true, 3, true).status, "stopped");
  EXPECT_EQ(row_verdict(1e-3, 1e-2, true, 3, false).status, "ok");
  EXPECT_EQ(row_verdict(std::nan(""), 1e-2, true, 3, false).status, "fail");
}

// The ceilings are the H200's: the bench warns on any other card (bench_moe.cpp).
TEST(BenchFloor, CeilingsDescribeTheH200Only) {
  EXPECT_TRUE(ceilings_describe("NVIDIA H200"));
  EXPECT_TRUE(ceilings_describe("NVIDIA H200 NVL"));
  EXPECT_FALSE(ceilings_describe("NVIDIA H100 80GB HBM3"));
  EXPECT_FALSE(ceilings_describe(""));
}

}  // namespace
}  // namespace servekit::bench
