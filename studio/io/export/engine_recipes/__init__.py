"""One recipe per serving engine (vLLM, TensorRT-LLM, SGLang): the plan as its flags and config."""
