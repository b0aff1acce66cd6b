// Output shapes and dtypes at kernelbench scale, checked without allocating anything: the specs are
// compared with KernelBench's own shapes, transcribed from its level-1 task files (KernelBench's
// repository, snapshot of 2026-03-05; docs/tasks.md) into the table below.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <reference/task_registry.h>

namespace kbrl {
namespace {

struct NamedShape {
  std::string name;
  std::vector<int64_t> shape;
};

struct KernelBenchTask {
  int id;
  std::string name;
  std::vector<NamedShape> inputs;  // tensor inputs only (task 5's scalar is checked apart)
  std::vector<int64_t> output;     // empty for a 0-d scalar
};

const std::vector<KernelBenchTask> kKernelBench = {
    {1, "1_Square_matrix_multiplication_", {{"A", {4096,4096}}, {"B", {4096,4096}}}, {4096,4096}},
    {2, "2_Standard_matrix_multiplication_", {{"A", {2048,8192}}, {"B", {8192,4096}}}, {2048,4096}},
    {3, "3_Batched_matrix_multiplication", {{"A", {128,512,1024}}, {"B", {128,1024,2048}}}, {128,512,2048}},
    {4, "4_Matrix_vector_multiplication_", {{"A", {2048,1048576}}, {"B", {1048576,1}}}, {2048,1}},
    {5, "5_Matrix_scalar_multiplication", {{"A", {65536,16384}}}, {65536,16384}},
    {6, "6_Matmul_with_large_K_dimension_", {{"A", {256,524288}}, {"B", {524288,256}}}, {256,256}},
    {7, "7_Matmul_with_small_K_dimension_", {{"A", {32768,64}}, {"B", {64,32768}}}, {32768,32768}},
    {8, "8_Matmul_with_irregular_shapes_", {{"A", {8205,2949}}, {"B", {2949,5921}}}, {8205,5921}},
    {9, "9_Tall_skinny_matrix_multiplication_", {{"A", {32768,32}}, {"B", {32,32768}}}, {32768,32768}},
    {10, "10_3D_tensor_matrix_multiplication", {{"A", {16,1024,2048}}, {"B", {2048,768}}}, {16,1024,768}},
    {11, "11_4D_tensor_matrix_multiplication", {{"A", {8,256,512,256}}, {"B", {256,768}}}, {8,256,512,768}},
    {12, "12_Matmul_with_diagonal_matrices_", {{"A", {4096}}, {"B", {4096,4096}}}, {4096,4096}},
    {13, "13_Matmul_for_symmetric_matrices", {{"A", {4096,4096}}, {"B", {4096,4096}}}, {4096,4096}},
    {14, "14_Matmul_for_upper_triangular_matrices", {{"A", {4096,4096}}, {"B", {4096,4096}}}, {4096,4096}},
    {15, "15_Matmul_for_lower_triangular_matrices", {{"A", {4096,4096}}, {"B", {4096,4096}}}, {4096,4096}},
    {16, "16_Matmul_with_transposed_A", {{"A", {8192,2048}}, {"B", {8192,4096}}}, {2048,4096}},
    {17, "17_Matmul_with_transposed_B", {{"A", {2048,8192}}, {"B", {4096,8192}}}, {2048,4096}},
    {18, "18_Matmul_with_transposed_both", {{"A", {8192,2048}}, {"B", {4096,8192}}}, {2048,4096}},
    {19, "19_ReLU", {{"x", {4096,393216}}}, {4096,393216}},
    {20, "20_LeakyReLU", {{"x", {4096,393216}}}, {4096,393216}},
    {21, "21_Sigmoid", {{"x", {4096,393216}}}, {4096,393216}},
    {22, "22_Tanh", {{"x", {4096,393216}}}, {4096,393216}},
    {23, "23_Softmax", {{"x", {4096,393216}}}, {4096,393216}},
    {24, "24_LogSoftmax", {{"x", {4096,393216}}}, {4096,393216}},
    {25, "25_Swish", {{"x", {4096,393216}}}, {4096,393216}},
    {26, "26_GELU_", {{"x", {4096,393216}}}, {4096,393216}},
    {27, "27_SELU_", {{"x", {4096,393216}}}, {4096,393216}},
    {28, "28_HardSigmoid", {{"x", {4096,393216}}}, {4096,393216}},
    {29, "29_Softplus", {{"x", {4096,393216}}}, {4096,393216}},
    {30, "30_Softsign", {{"x", {4096,393216}}}, {4096,393216}},
    {31, "31_ELU", {{"x", {4096,393216}}}, {4096,393216}},
    {32, "32_HardTanh", {{"x", {4096,393216}}}, {4096,393216}},
    {33, "33_BatchNorm", {{"x", {64,64,512,512}}}, {64,64,512,512}},
    {34, "34_InstanceNorm", {{"x", {112,64,512,512}}}, {112,64,512,512}},
    {35, "35_GroupNorm_", {{"x", {112,64,512,512}}}, {112,64,512,512}},
    {36, "36_RMSNorm_", {{"x", {112,64,512,512}}}, {112,64,512,512}},
    {37, "37_FrobeniusNorm_", {{"x", {112,64,512,512}}}, {112,64,512,512}},
    {38, "38_L1Norm_", {{"x", {32768,65535}}}, {32768,65535}},
    {39, "39_L2Norm_", {{"x", {32768,65535}}}, {32768,65535}},
    {40, "40_LayerNorm", {{"x", {16,64,256,256}}}, {16,64,256,256}},
    {41, "41_Max_Pooling_1D", {{"x", {64,192,65536}}}, {64,192,65523}},
    {42, "42_Max_Pooling_2D", {{"x", {32,64,512,512}}}, {32,64,511,511}},
    {43, "43_Max_Pooling_3D", {{"x", {16,32,128,128,128}}}, {16,32,62,62,62}},
    {44, "44_Average_Pooling_1D", {{"x", {64,128,65536}}}, {64,128,65537}},
    {45, "45_Average_Pooling_2D", {{"x", {16,64,2048,2048}}}, {16,64,186,186}},
    {46, "46_Average_Pooling_3D", {{"x", {16,32,128,128,256}}}, {16,32,64,64,128}},
    {47, "47_Sum_reduction_over_a_dimension", {{"x", {128,4096,4095}}}, {128,1,4095}},
    {48, "48_Mean_reduction_over_a_dimension", {{"x", {128,4096,4095}}}, {128,4095}},
    {49, "49_Max_reduction_over_a_dimension", {{"x", {128,4096,4095}}}, {128,4095}},
    {50, "50_conv_standard_2D__square_input__square_kernel", {{"x", {256,3,224,224}}}, {256,96,55,55}},
    {51, "51_Argmax_over_a_dimension", {{"x", {128,4096,4095}}}, {128,4095}},
    {52, "52_Argmin_over_a_dimension", {{"x", {128,4096,4095}}}, {128,4095}},
    {53, "53_Min_reduction_over_a_dimension", {{"x", {128,4096,4095}}}, {128,4095}},
    {54, "54_conv_standard_3D__square_input__square_kernel", {{"x", {16,3,64,64,64}}}, {16,64,62,62,62}},
    {55, "55_conv_standard_2D__asymmetric_input__square_kernel", {{"x", {8,64,512,1024}}}, {8,128,510,1022}},
    {56, "56_conv_standard_2D__asymmetric_input__asymmetric_kernel", {{"x", {8,64,512,256}}}, {8,128,508,250}},
    {57, "57_conv_transposed_2D__square_input__square_kernel", {{"x", {8,64,1024,1024}}}, {8,64,1026,1026}},
    {58, "58_conv_transposed_3D__asymmetric_input__asymmetric_kernel", {{"x", {16,32,16,32,64}}}, {16,16,18,36,70}},
    {59, "59_conv_standard_3D__asymmetric_input__square_kernel", {{"x", {16,3,256,256,10}}}, {16,64,254,254,10}},
    {60, "60_conv_standard_3D__square_input__asymmetric_kernel", {{"x", {16,3,64,64,64}}}, {16,64,62,60,58}},
    {61, "61_conv_transposed_3D__square_input__square_kernel", {{"x", {8,48,64,64,64}}}, {8,48,66,66,66}},
    {62, "62_conv_standard_2D__square_input__asymmetric_kernel", {{"x", {8,32,512,512}}}, {8,64,508,504}},
    {63, "63_conv_standard_2D__square_input__square_kernel", {{"x", {16,16,1024,1024}}}, {16,128,1022,1022}},
    {64, "64_conv_transposed_1D", {{"x", {64,128,65536}}}, {64,128,65538}},
    {65, "65_conv_transposed_2D__square_input__asymmetric_kernel", {{"x", {8,64,512,512}}}, {8,64,514,518}},
    {66, "66_conv_standard_3D__asymmetric_input__asymmetric_kernel", {{"x", {8,3,16,128,128}}}, {8,64,14,124,122}},
    {67, "67_conv_standard_1D", {{"x", {32,64,131072}}}, {32,128,131070}},
    {68, "68_conv_transposed_3D__square_input__asymmetric_kernel", {{"x", {16,32,64,64,64}}}, {16,64,66,68,68}},
    {69, "69_conv_transposed_2D__asymmetric_input__asymmetric_kernel", {{"x", {64,64,128,256}}}, {64,128,130,260}},
    {70, "70_conv_transposed_3D__asymmetric_input__square_kernel", {{"x", {8,48,96,96,96}}}, {8,24,98,98,98}},
    {71, "71_conv_transposed_2D__asymmetric_input__square_kernel", {{"x", {8,32,512,1024}}}, {8,32,514,1026}},
    {72, "72_conv_transposed_3D_asymmetric_input_asymmetric_kernel___strided_padded_grouped_", {{"x", {8,32,12,24,48}}}, {8,32,24,48,96}},
    {73, "73_conv_transposed_3D_asymmetric_input_square_kernel__strided_padded__grouped", {{"x", {4,32,32,64,128}}}, {4,32,63,127,255}},
    {74, "74_conv_transposed_1D_dilated", {{"x", {32,32,131072}}}, {32,64,131084}},
    {75, "75_conv_transposed_2D_asymmetric_input_asymmetric_kernel_strided__grouped____padded____dilated__", {{"x", {16,32,128,256}}}, {16,64,257,766}},
    {76, "76_conv_standard_1D_dilated_strided__", {{"x", {64,64,524280}}}, {64,128,174758}},
    {77, "77_conv_transposed_3D_square_input_square_kernel___padded____dilated____strided__", {{"x", {16,32,16,32,32}}}, {16,64,33,65,65}},
    {78, "78_conv_transposed_2D_asymmetric_input_asymmetric_kernel___padded__", {{"x", {8,32,512,1024}}}, {8,32,512,1024}},
    {79, "79_conv_transposed_1D_asymmetric_input_square_kernel___padded____strided____dilated__", {{"x", {16,32,131072}}}, {16,64,262145}},
    {80, "80_conv_standard_2D_square_input_asymmetric_kernel___dilated____padded__", {{"x", {8,32,512,512}}}, {8,64,508,496}},
    {81, "81_conv_transposed_2D_asymmetric_input_square_kernel___dilated____padded____strided__", {{"x", {16,32,64,128}}}, {16,64,318,638}},
    {82, "82_conv_depthwise_2D_square_input_square_kernel", {{"x", {16,64,512,512}}}, {16,64,510,510}},
    {83, "83_conv_depthwise_2D_square_input_asymmetric_kernel", {{"x", {64,8,512,512}}}, {64,8,510,512}},
    {84, "84_conv_depthwise_2D_asymmetric_input_square_kernel", {{"x", {64,128,256,512}}}, {64,128,254,510}},
    {85, "85_conv_depthwise_2D_asymmetric_input_asymmetric_kernel", {{"x", {32,128,128,256}}}, {32,128,126,250}},
    {86, "86_conv_depthwise_separable_2D", {{"x", {16,64,512,512}}}, {16,128,512,512}},
    {87, "87_conv_pointwise_2D", {{"x", {16,64,1024,1024}}}, {16,128,1024,1024}},
    {88, "88_MinGPTNewGelu", {{"x", {8192,8192}}}, {8192,8192}},
    {89, "89_cumsum", {{"x", {32768,32768}}}, {32768,32768}},
    {90, "90_cumprod", {{"x", {32768,32768}}}, {32768,32768}},
    {91, "91_cumsum_reverse", {{"x", {32768,32768}}}, {32768,32768}},
    {92, "92_cumsum_exclusive", {{"x", {32768,32768}}}, {32768,32768}},
    {93, "93_masked_cumsum", {{"x", {32768,32768}}, {"mask", {32768,32768}}}, {32768,32768}},
    {94, "94_MSELoss", {{"predictions", {32768,32768}}, {"targets", {32768,32768}}}, {}},
    {95, "95_CrossEntropyLoss", {{"predictions", {32768,4096}}, {"targets", {32768}}}, {}},
    {96, "96_HuberLoss", {{"predictions", {32768,32768}}, {"targets", {32768,32768}}}, {}},
    {97, "97_ScaledDotProductAttention", {{"Q", {32,32,512,1024}}, {"K", {32,32,512,1024}}, {"V", {32,32,512,1024}}}, {32,32,512,1024}},
    {98, "98_KLDivLoss", {{"predictions", {16384,16384}}, {"targets", {16384,16384}}}, {}},
    {99, "99_TripletMarginLoss", {{"anchor", {32768,8192}}, {"positive", {32768,8192}}, {"negative", {32768,8192}}}, {}},
    {100, "100_HingeLoss", {{"predictions", {32768,32768}}, {"targets", {32768}}}, {}},
};

TEST(KernelBenchShapes, EveryTaskMatchesKernelBench) {
  ASSERT_EQ(kKernelBench.size(), 100u);
  for (const auto& kb : kKernelBench) {
    SCOPED_TRACE("task " + std::to_string(kb.id));
    const TaskSpec spec = task_spec(kb.id, Scale::kernelbench);
    EXPECT_EQ(spec.name, kb.name);
    ASSERT_EQ(spec.inputs.size(), kb.inputs.size());
    for (size_t i = 0; i < kb.inputs.size(); ++i) {
      EXPECT_EQ(spec.inputs[i].name, kb.inputs[i].name);
      EXPECT_EQ(spec.inputs[i].shape, kb.inputs[i].shape) << spec.inputs[i].name;
    }
    ASSERT_EQ(spec.outputs.size(), 1u);
    EXPECT_EQ(spec.outputs[0].shape, kb.output);
  }
}

TEST(KernelBenchShapes, DtypesFollowKernelBench) {
  for (int id : task_ids()) {
    SCOPED_TRACE("task " + std::to_string(id));
    const TaskSpec spec = task_spec(id, Scale::kernelbench);
    for (const auto& in : spec.inputs) {
      DType expected = DType::f32;
      if (id == 93 && in.name == "mask") expected = DType::b8;     // torch.randint(0,2).bool()
      if (id == 95 && in.name == "targets") expected = DType::i64;  // class indices stay int64
      EXPECT_EQ(in.dtype, expected) << in.name;
    }
    const DType out = (id == 51 || id == 52) ? DType::i64 : DType::f32;  // argmax/argmin indices
    EXPECT_EQ(spec.outputs.at(0).dtype, out);
    EXPECT_EQ(spec.scalars.size(), id == 5 ? 1u : 0u);
  }
}

}  // namespace
}  // namespace kbrl
