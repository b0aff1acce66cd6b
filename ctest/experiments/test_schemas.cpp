// Golden headers of every CSV schema the loops and experiments write: a change to a schema must be
// a deliberate change to this file (and to the plots and readers that use the column).
#include <gtest/gtest.h>

#include <experiments/report_schemas.h>
#include <experiments/schemas.h>

namespace kbrl {
namespace {

TEST(Schemas, GoldenHeaders) {
  const std::vector<std::pair<const CsvSchema*, std::string>> golden = {
      {&schemas::training_steps(),
       "run,step,tasks,rollouts,compiled_rate,correct_rate,fast_1,sig_fast_1,mean_speedup_correct,mean_reward,"
       "kl_to_start,entropy,loss,grad_norm,clip_fraction,tokens,teacher_tokens,compile_seconds,"
       "evaluator_seconds,wall_seconds,format_rate"},
      {&schemas::ttt_task_steps(),
       "run,step,task_id,rollouts,correct_rate,fast_1,sig_fast_1,best_speedup,mean_speedup_correct"},
      {&schemas::samples(),
       "run,policy,task_id,sample,config,tokens,logprob,surprisal,token_count,outcome,compiled,correct,"
       "speedup,speedup_low,speedup_high,reward,action,mean_logprob,prompt_version,finish_reason,outcome_detail,"
       "text,code"},
      {&schemas::sft_epochs(), "epoch,items,mean_loss,nll_per_token,wall_seconds"},
      {&schemas::policy_sweep(),
       "policy,tasks,samples,compiled_rate,correct_rate,fast_1,sig_fast_1,mean_speedup_correct,"
       "geomean_speedup_correct"},
      {&schemas::model_sweep(),
       "model,compiled,correct,tasks,avg_runtime_ms,correctness_pct,checked,samples_per_task,format_error_rate,"
       "compile_rate,correct_rate,mean_tokens,temperature"},
      {&schemas::model_sweep_tasks(),
       "model,task_id,task_name,samples,format_errors,compiled,correct,mean_tokens,first_outcome"},
      {&schemas::bon_scaling(),
       "subset,k,task_success,std,ci_low,ci_high,sig_task_success,sig_std,sig_ci_low,sig_ci_high,"
       "expected_best_speedup,seeds,samples_per_task"},
      {&schemas::bon_selected(), "subset,seed,task_id,samples,correct,fast,sig_fast,selected_speedup"},
      {&schemas::selection(),
       "subset,strategy,fast_1,std,sig_fast_1,sig_std,mean_speedup,evaluations,timed_evaluations,fast_1_low,fast_1_high"},
      {&schemas::selection_tests(),
       "subset,comparison,p1,p2,cohens_h,sig_p1,sig_p2,sig_cohens_h,wilcoxon_w,wilcoxon_p,wilcoxon_method,"
       "sign_positives,sign_negatives,sign_p,pairs,wilcoxon_w_plus,sign_p_one_sided"},
      {&schemas::selection_topm(), "subset,m,evaluations_per_task,task_success,sig_task_success,mean_speedup"},
      {&schemas::length_control(), "analysis,rho,p_value,n"},
      {&schemas::surprisal_quartiles(), "quartile,samples,fast_1,sig_fast_1,mean_speedup,mean_tokens,mean_surprisal"},
      {&schemas::equal_budget(), "subset,method,rollouts,fast_1,sig_fast_1,equivalent_k,fast_1_low,fast_1_high,seed,std_over_seeds"},
      {&schemas::early_stopping(),
       "run,steps,oracle_step,oracle_fast_1,p1_stop_step,p1_step,p1_fast_1,p1_matches_oracle"},
      {&schemas::rho_trajectory(),
       "step,samples,rho,p_value,tail_samples,tail_rho,tail_p_value,mean_nll,distinct_samples,distinct_rho,"
       "distinct_p_value"},
      {&schemas::robustness(),
       "subset,task_id,base_fast_1,base_sig_fast_1,bon_fast_1,bon_sig_fast_1,boa_fast_1,boa_sig_fast_1,"
       "boa_minus_bon,winner,boa_minus_bon_low,boa_minus_bon_high"},
      {&schemas::transfer(),
       "adapted_on,evaluated_on,base_fast_1,base_sig_fast_1,adapted_fast_1,adapted_sig_fast_1,delta,bon_fast_1,"
       "bon_sig_fast_1,delta_low,delta_high"},
      {&schemas::adaptation_runs(),
       "experiment,method,value,seed,tasks,boa_step,boa_fast_1,boa_sig_fast_1,step0_fast_1,step0_sig_fast_1,"
       "final_fast_1,final_sig_fast_1,final_correct_rate,steps_run,rollouts,tokens,teacher_tokens,boa_fast_1_low,"
       "boa_fast_1_high"},
      {&schemas::sweep_configs(),
       "task_id,config,is_expert,outcome,compiled,correct,speedup,speedup_low,speedup_high,candidate_ms,"
       "reference_ms,sol_fraction,precision,flags"},
      {&schemas::sweep_tasks(),
       "task_id,task_name,family,space_size,evaluated,compiled,correct,best_speedup,best_config,best_audit,"
       "best_sol_fraction,best_fp32_speedup,best_fp32_config,expert_speedup"},
      {&schemas::compute(),
       "method,seeds,rollouts,student_tokens,teacher_tokens,total_tokens,compile_seconds,evaluator_seconds"},
      {&schemas::entropy_rho(),
       "entropy_coef,step,samples,rho,p_value,tail_samples,tail_rho,tail_p_value,mean_nll,distinct_samples,"
       "distinct_rho,distinct_p_value"},
      {&schemas::sparsification(),
       "reward,seed,steps,boa_step,boa_fast_1,boa_sig_fast_1,step0_fast_1,step0_sig_fast_1,final_fast_1,"
       "final_sig_fast_1,step0_reward_density,step0_mean_reward"},
      {&schemas::ablations_per_task(),
       "task_id,experiment,method,value,seed,tasks,boa_step,boa_fast_1,boa_sig_fast_1,step0_fast_1,step0_sig_fast_1,"
       "final_fast_1,final_sig_fast_1,final_correct_rate,steps_run,rollouts,tokens,teacher_tokens,boa_fast_1_low,"
       "boa_fast_1_high"},
      {&schemas::judge_scores(),
       "policy,task_id,sample,outcome,correctness,compilability,speed,judge_mean,kernel_reward,reward,judge_error"},
      {&schemas::speedup_by_seed(), "method,seed,boa_step,fast_1,mean_speedup_correct,std_over_seeds"},
      {&schemas::sft_steps(), "step,epoch,train_loss,eval_nll_per_token"},
      {&schemas::per_task_ttt(),
       "seed,task_id,greedy_fast,greedy_sig_fast,bon_k,bon_correct_rate,bon_fast_1,bon_sig_fast_1,bon_task_success,"
       "bon_sig_task_success,bon_best_speedup,ttt_k,ttt_steps,ttt_boa_step,ttt_correct_rate,ttt_fast_1,"
       "ttt_sig_fast_1,ttt_task_success,ttt_sig_task_success,ttt_best_speedup,ttt_rollouts,ttt_minus_bon_fast_1"},
      {&schemas::per_task_ttt_summary(),
       "method,rollouts_per_task,tasks,correct_rate,fast_1,fast_1_low,fast_1_high,sig_fast_1,task_success,"
       "task_success_low,task_success_high,sig_task_success,mean_best_speedup"},
  };
  for (const auto& [schema, header] : golden) EXPECT_EQ(schema->header(), header) << schema->name;
}

}  // namespace
}  // namespace kbrl
