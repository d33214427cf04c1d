"""The model server's HTTP and WebSocket routes: the SageMaker contract, POST, and OpenAI's speech API."""
