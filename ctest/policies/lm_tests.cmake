kbrl_add_test(NAME test_lm_files LABELS unit SOURCES test_lm_model_file.cpp test_lm_model_names.cpp test_lm_chat_template.cpp
  LIBS kbrl::lm_files)
# The language-model policy on a small random model (no model file, no server).
kbrl_add_test(NAME test_lm_policy LABELS unit TIMEOUT 300 SOURCES test_lm_policy.cpp test_lm_micro_batches.cpp LIBS kbrl::lm kbrl::reference)
# The batch decoder against a full-forward reference (CPU); its CUDA graphs on a GPU (skipped without).
kbrl_add_test(NAME test_lm_decoder LABELS unit TIMEOUT 120 SOURCES test_lm_decoder.cpp LIBS kbrl::lm TORCH)
# The language model against llama.cpp (parity of log-probs and greedy decoding) and the trainable
# policy on SmolLM2 (LoRA no-op at init, one GRPO step): needs .ci/setup-llm's server and model.
kbrl_add_test(NAME test_lm_llm LABELS llm TIMEOUT 900 SOURCES test_lm_llm.cpp LIBS kbrl::lm kbrl::policies kbrl::reference)
target_compile_definitions(test_lm_llm PRIVATE KBRL_LLM_URL_FILE="${KBRL_LLM_STATE_DIR}/url"
  KBRL_WRITER_ADAPTER="${PROJECT_SOURCE_DIR}/results/h100-80gb-hbm3/lm-writer-smollm2/run4/sft_corpus/adapter.pt")
set_tests_properties(test_lm_llm PROPERTIES FIXTURES_REQUIRED llama_server
  SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\] [0-9]+ tests?[.,]")
# The committed writer adapter writing kernels on the CPU: a greedy answer to an eval-split task,
# compiled for sm_90 (no server; about 1.5 minutes of one core, one thread, since CI's other core
# runs the server's tests): started early beside the server's chain (its COST), not last.
add_test(NAME llm_writer_smoke
  COMMAND bash ${PROJECT_SOURCE_DIR}/ctest/with_budget.sh 580 bash ${PROJECT_SOURCE_DIR}/ctest/llm/writer_smoke.sh
          $<TARGET_FILE:kbrl> ${PROJECT_SOURCE_DIR}/results/h100-80gb-hbm3/lm-writer-smollm2/run4/sft_corpus/adapter.pt
          ${CMAKE_BINARY_DIR}/results-llm/writer_smoke)
set_tests_properties(llm_writer_smoke PROPERTIES LABELS llm TIMEOUT 600 SKIP_RETURN_CODE 77 COST ${KBRL_LLM_CHAIN_COST}
  ENVIRONMENT OMP_NUM_THREADS=1)
# Data-parallel updates (policies/lm/data_parallel.h): kbrl_lm_dp_rank is one rank of a GRPO update,
# test_lm_data_parallel runs it on 1, 2 and 3 ranks against one process (a CPU build through Gloo; a
# CUDA build through NCCL on GPUs, gpu label), bench_lm's BM_TrainStepDataParallel on 1, 2 and 4 GPUs.
add_executable(kbrl_lm_dp_rank lm_dp_rank.cpp)
target_link_libraries(kbrl_lm_dp_rank PRIVATE kbrl::lm kbrl::reference nlohmann_json::nlohmann_json kbrl_warnings)
kbrl_use_torch(kbrl_lm_dp_rank)
if(KBRL_TORCH_CUDA)
  target_link_libraries(kbrl_lm_dp_rank PRIVATE CUDA::cudart)
  set(_kbrl_dp_label gpu)
else()
  set(_kbrl_dp_label unit)
endif()
kbrl_add_test(NAME test_lm_data_parallel LABELS ${_kbrl_dp_label} TIMEOUT 300 TORCH SOURCES test_lm_data_parallel.cpp
  LIBS kbrl::lm)
target_compile_definitions(test_lm_data_parallel PRIVATE KBRL_LM_DP_RANK="$<TARGET_FILE:kbrl_lm_dp_rank>")
add_dependencies(test_lm_data_parallel kbrl_lm_dp_rank)
# Sampling and training tokens/s of the model in the process, next to llama-server's (bench label).
kbrl_add_benchmark(NAME bench_lm SOURCES bench_lm_sampling.cpp bench_lm_training.cpp bench_lm_models.cpp LIBS kbrl::lm kbrl::reference kbrl_testing)
if(TARGET bench_lm)
  target_compile_definitions(bench_lm PRIVATE KBRL_LLM_URL_FILE="${KBRL_LLM_STATE_DIR}/url")
  set_tests_properties(bench_lm PROPERTIES FIXTURES_REQUIRED llama_server)
  target_link_libraries(bench_lm PRIVATE CUDA::cudart)  # cudaMemGetInfo: the 1.5B step's memory
  target_compile_definitions(bench_lm PRIVATE KBRL_LM_DP_RANK="$<TARGET_FILE:kbrl_lm_dp_rank>")
  add_dependencies(bench_lm kbrl_lm_dp_rank)
endif()
# The parity test's second oracle: llama-server computing in float32 on the dequantized copy of the
# same GGUF (`kbrl model f32`), float32 KV cache, no flash attention.
set(KBRL_LLM_F32_STATE_DIR "${CMAKE_BINARY_DIR}/llm-f32")
add_test(NAME llm_f32_model
  COMMAND bash ${PROJECT_SOURCE_DIR}/ctest/llm/f32_model.sh $<TARGET_FILE:kbrl> ${KBRL_LLM_F32_STATE_DIR}/model-f32.gguf)
set_tests_properties(llm_f32_model PROPERTIES LABELS llm TIMEOUT 300 FIXTURES_SETUP llm_f32_model
  COST ${KBRL_LLM_CHAIN_COST})
add_test(NAME llama_server_f32_start
  COMMAND bash ${PROJECT_SOURCE_DIR}/ctest/llm/llama_server.sh start ${KBRL_LLM_F32_STATE_DIR}
          ${KBRL_LLM_F32_STATE_DIR}/model-f32.gguf -ctk f32 -ctv f32 -fa off)
add_test(NAME llama_server_f32_stop
  COMMAND bash ${PROJECT_SOURCE_DIR}/ctest/llm/llama_server.sh stop ${KBRL_LLM_F32_STATE_DIR})
set_tests_properties(llama_server_f32_start PROPERTIES LABELS llm TIMEOUT 120 FIXTURES_SETUP llama_server_f32
  FIXTURES_REQUIRED llm_f32_model COST ${KBRL_LLM_CHAIN_COST})
set_tests_properties(llama_server_f32_stop PROPERTIES LABELS llm TIMEOUT 60 FIXTURES_CLEANUP llama_server_f32)
target_compile_definitions(test_lm_llm PRIVATE KBRL_LLM_F32_URL_FILE="${KBRL_LLM_F32_STATE_DIR}/url")
set_tests_properties(test_lm_llm PROPERTIES FIXTURES_REQUIRED "llama_server;llama_server_f32" RESOURCE_LOCK llama_server
  COST ${KBRL_LLM_CHAIN_COST})
# The language-model RL loop end to end on a GPU in one process: SFT warm start of a random model
# (float32, CUDA) on the known-good ReLU body, then GRPO steps sampled, compiled and evaluated by
# the real evaluator (skipped without a GPU). Figures to $KBRL_RESULTS_OUT/lm_gpu_e2e.csv when set.
kbrl_add_test(NAME test_lm_gpu LABELS gpu TIMEOUT 900 SOURCES test_lm_gpu.cpp test_lm_update_gpu.cpp
  LIBS kbrl::lm kbrl::algorithms kbrl::harness kbrl::kernels kbrl::reference)
target_compile_definitions(test_lm_gpu PRIVATE KBRL_CLI="$<TARGET_FILE:kbrl>")
add_dependencies(test_lm_gpu kbrl)
