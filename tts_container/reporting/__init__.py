"""What the server reports: its counters, the Prometheus ``/metrics`` text, and the CloudWatch metric
lines."""
