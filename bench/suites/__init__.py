"""Benchmark suites. Each module has NAME, METRIC (the result key its tables show: "tflops",
"median_us" or "gbps"), CASE_KEYS (the case columns), cases(smoke, cpu) yielding case dicts, run(case)
returning one result row, and plot(doc, path)."""
SUITES = ["attention_fa3_sweep", "attention_small", "attention_decode", "gemm_bf16", "gemm_fp8",
          "gemm_fp8_small", "quant"]
