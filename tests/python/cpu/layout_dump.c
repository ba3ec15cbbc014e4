/* Prints the layout of every struct the Python package mirrors (python/fusedtune/_lib.py), as
 * the C compiler sees it, plus the constants it copies: "struct NAME SIZE", "field NAME.F OFFSET",
 * "const NAME VALUE". tests/python/cpu/test_fusedtune.py compares them with ctypes. */
#include <fusedtune.h>
#include <fusedtune_tool.h>
#include <stddef.h>
#include <stdio.h>

#define S(T) printf("struct %s %zu\n", #T, sizeof(T));
#define F(T, f) printf("field %s.%s %zu\n", #T, #f, offsetof(T, f));
#define C(name) printf("const %s %lld\n", #name, (long long)(name));

int main(void) {
  S(ft_problem) F(ft_problem, m) F(ft_problem, n) F(ft_problem, k) F(ft_problem, epilogue) F(ft_problem, math)
  S(ft_config) F(ft_config, strategy) F(ft_config, name) F(ft_config, config) F(ft_config, source_hash)
  F(ft_config, median_ms) F(ft_config, eager_ms) F(ft_config, tuned_m) F(ft_config, tuned_n) F(ft_config, tuned_k)
  F(ft_config, exact) F(ft_config, math) F(ft_config, rel_err) F(ft_config, max_abs_err)
  S(ft_vec_arg) F(ft_vec_arg, name) F(ft_vec_arg, data)
  S(ft_scalar_arg) F(ft_scalar_arg, name) F(ft_scalar_arg, value)
  S(ft_args) F(ft_args, x) F(ft_args, w) F(ft_args, y) F(ft_args, vecs) F(ft_args, n_vecs) F(ft_args, scalars)
  F(ft_args, n_scalars) F(ft_args, dtype)
  S(ft_tensor_arg) F(ft_tensor_arg, name) F(ft_tensor_arg, data) F(ft_tensor_arg, dtype)
  S(ft_typed_args) F(ft_typed_args, struct_size) F(ft_typed_args, x) F(ft_typed_args, w) F(ft_typed_args, y)
  F(ft_typed_args, vecs) F(ft_typed_args, n_vecs) F(ft_typed_args, scalars) F(ft_typed_args, n_scalars)
  F(ft_typed_args, y_scales) F(ft_typed_args, y_work) F(ft_typed_args, quantizer)
  S(ft_tune_progress) F(ft_tune_progress, phase) F(ft_tune_progress, message) F(ft_tune_progress, done)
  F(ft_tune_progress, total) F(ft_tune_progress, best_ms) F(ft_tune_progress, elapsed_s) F(ft_tune_progress, eta_s) F(ft_tune_progress, eager_ms)
  S(ft_tune_options) F(ft_tune_options, struct_size) F(ft_tune_options, strategy) F(ft_tune_options, budget_s)
  F(ft_tune_options, repeats) F(ft_tune_options, retune) F(ft_tune_options, flush_l2) F(ft_tune_options, quiet)
  F(ft_tune_options, seed) F(ft_tune_options, progress) F(ft_tune_options, progress_user) F(ft_tune_options, stop)
  F(ft_tune_options, worker_exe) F(ft_tune_options, max_candidates) F(ft_tune_options, mode_only)
  S(ft_import_counts) F(ft_import_counts, devices) F(ft_import_counts, problems) F(ft_import_counts, runs)
  F(ft_import_counts, results) F(ft_import_counts, cubins) F(ft_import_counts, devices_in)
  F(ft_import_counts, problems_in) F(ft_import_counts, runs_in) F(ft_import_counts, results_in)
  F(ft_import_counts, cubins_in)
  S(ft_best_entry) F(ft_best_entry, device_name) F(ft_best_entry, math) F(ft_best_entry, epilogue)
  F(ft_best_entry, config)
  S(ft_device_desc) F(ft_device_desc, ordinal) F(ft_device_desc, name) F(ft_device_desc, fingerprint)
  F(ft_device_desc, arch) F(ft_device_desc, sm_count) F(ft_device_desc, mem_bytes) F(ft_device_desc, driver_version)
  F(ft_device_desc, runtime_version) F(ft_device_desc, nvrtc_version) F(ft_device_desc, cublas_version)
  S(ft_variant_info) F(ft_variant_info, name) F(ft_variant_info, config) F(ft_variant_info, strategy)
  F(ft_variant_info, source_hash) F(ft_variant_info, compile_status) F(ft_variant_info, compile_log)
  F(ft_variant_info, regs) F(ft_variant_info, spill_bytes)
  S(ft_variant_list) F(ft_variant_list, arch) F(ft_variant_list, epilogue) F(ft_variant_list, count)
  F(ft_variant_list, items) F(ft_variant_list, compiled) F(ft_variant_list, n_compiled_ok) F(ft_variant_list, compile_s)
  S(ft_epilogue_param) F(ft_epilogue_param, name) F(ft_epilogue_param, type) F(ft_epilogue_param, has_default)
  F(ft_epilogue_param, default_value)
  S(ft_epilogue_info) F(ft_epilogue_info, canonical) F(ft_epilogue_info, hash) F(ft_epilogue_info, cuda)
  F(ft_epilogue_info, n_params) F(ft_epilogue_info, params) F(ft_epilogue_info, uses_x2)
  S(ft_problem_item) F(ft_problem_item, problem) F(ft_problem_item, line) F(ft_problem_item, entry)
  F(ft_problem_item, duplicate_of)
  S(ft_problem_list) F(ft_problem_list, count) F(ft_problem_list, items) F(ft_problem_list, n_unique)
  F(ft_problem_list, n_entries) F(ft_problem_list, csv)
  /* enums the structs hold, and the constants _lib.py copies */
  printf("enum ft_status %zu\nenum ft_math %zu\nenum ft_dtype %zu\nenum ft_param_type %zu\nenum ft_strategy %zu\n",
         sizeof(ft_status), sizeof(ft_math), sizeof(ft_dtype), sizeof(ft_param_type), sizeof(ft_strategy));
  C(FUSEDTUNE_VERSION_NUMBER) C(FT_OPEN_READONLY) C(FT_OPEN_CREATE) C(FT_LOOKUP_NEAREST) C(FT_LOOKUP_EXACT) C(FT_MATCH_NEAREST) C(FT_MATCH_EXACT) C(FT_MATCH_BUCKET) C(FT_VARIANTS_COMPILE)
  C(FT_CONFIG_JSON_MAX) C(FT_NAME_MAX) C(FT_EPILOGUE_MAX_PARAMS) C(FT_DTYPE_F32) C(FT_DTYPE_BF16) C(FT_DTYPE_F16) C(FT_DTYPE_E4M3)
  C(FT_PARAM_TYPE_SCALAR) C(FT_PARAM_TYPE_COLVEC) C(FT_PARAM_TYPE_ROWVEC)
#define STATUS_(name, value, text) printf("status FT_%s %d\n", #name, value);
  FT_STATUS_MAP(STATUS_)
  /* FT_TUNE_OPTIONS_INIT, field by field: tune_options_init() must match it */
  const ft_tune_options o = FT_TUNE_OPTIONS_INIT;
  printf("init struct_size %zu\ninit strategy %s\ninit budget_s %g\ninit repeats %d\ninit retune %d\n"
         "init flush_l2 %d\ninit quiet %d\ninit seed %llu\ninit max_candidates %d\n",
         o.struct_size, o.strategy, o.budget_s, o.repeats, o.retune, o.flush_l2, o.quiet,
         (unsigned long long)o.seed, o.max_candidates);
  return 0;
}
