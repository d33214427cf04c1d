"""AWS CDK v2 app for strands-kokoro: the SageMaker speech endpoint and the AgentCore agent.

Imports nothing from the other packages at run time: their folders are only Docker build contexts.
"""
