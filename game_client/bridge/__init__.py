"""The LLM text bridge: prompts, reply parsing, memory, and the chat provider."""
