"""The five stacks: speech foundation, model cache, speech endpoint, agent foundation, agent runtime."""
