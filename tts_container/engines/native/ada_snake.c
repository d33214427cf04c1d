/* AdaSnake: one of the vocoder's AdaIN normalizations and the snake activation after it, in one pass.
 *
 *   h = gain * (x - mean) / deviation + bias
 *   y = h + sin(alpha * h)^2 / alpha
 *
 * x and y are (N, C, T) float; mean, deviation, gain, bias and alpha are (N or 1, C, 1) float.
 * onnxruntime runs the same arithmetic as seven graph nodes, each a pass over the whole tensor, and its
 * Sin costs as much as ten multiplications; here each value is read and written once, and sin^2 is a
 * polynomial (see snake_row). Registered as ai.strands_kokoro.AdaSnake by RegisterCustomOps, the entry
 * point onnxruntime's SessionOptions.register_custom_ops_library calls.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "onnxruntime_c_api.h"

#define DOMAIN "ai.strands_kokoro"
#define PARAMETERS 5 /* mean, deviation, gain, bias, alpha */

static const OrtApi *ort;

typedef struct {
  const float *x;
  const float *parameters[PARAMETERS];
  int64_t parameter_rows[PARAMETERS]; /* 1: one value per channel for every item of the batch */
  float *y;
  int64_t channels, steps;
} Job;

/* One channel's row. sin(u)^2 = sin(r)^2 for u = k * pi + r, |r| <= pi / 2 (sin^2 has period pi), and
 * sin(r) is its Taylor series to r^11: the error is under float's own rounding on that interval. pi is
 * subtracted in two parts (Cody-Waite) so r stays exact for the arguments the vocoder makes. The loop has
 * no branch and no call, so it vectorizes; target_clones builds it for AVX-512, AVX2 and the baseline
 * and the loader picks the one this CPU runs. */
#if defined(__x86_64__) && defined(__linux__)
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
static void snake_row(const float *x, float *y, int64_t steps, float scale, float shift, float alpha) {
  const float inverse = 1.0f / alpha, inverse_pi = 0.318309886183790672f;
  const float pi_high = 3.14159274101257324f, pi_low = -8.74227766e-8f;
  const float round_shift = 12582912.0f; /* 1.5 * 2^23: adding and subtracting it rounds to an integer */
  for (int64_t i = 0; i < steps; ++i) {
    float h = scale * x[i] + shift;
    float u = alpha * h;
    float k = (u * inverse_pi + round_shift) - round_shift;
    float r = (u - k * pi_high) - k * pi_low;
    float r2 = r * r;
    float p = -2.50521084e-8f;
    p = p * r2 + 2.75573192e-6f;
    p = p * r2 - 1.98412698e-4f;
    p = p * r2 + 8.33333333e-3f;
    p = p * r2 - 1.66666667e-1f;
    float s = r + r * r2 * p;
    y[i] = h + inverse * (s * s);
  }
}

static void run_row(void *data, size_t row) {
  const Job *job = (const Job *)data;
  int64_t channel = (int64_t)row % job->channels, item = (int64_t)row / job->channels;
  float value[PARAMETERS];
  for (int i = 0; i < PARAMETERS; ++i)
    value[i] = job->parameters[i][(job->parameter_rows[i] == 1 ? 0 : item) * job->channels + channel];
  float mean = value[0], deviation = value[1], gain = value[2], bias = value[3], alpha = value[4];
  float scale = gain / deviation;
  snake_row(job->x + row * job->steps, job->y + row * job->steps, job->steps, scale, bias - mean * scale,
            alpha);
}

/* The dimensions of a tensor of rank 3 (any other rank is refused). */
static OrtStatusPtr dimensions(const OrtValue *value, int64_t dims[3]) {
  OrtTensorTypeAndShapeInfo *info;
  OrtStatusPtr status = ort->GetTensorTypeAndShape(value, &info);
  if (status) return status;
  size_t rank;
  status = ort->GetDimensionsCount(info, &rank);
  if (!status && rank != 3)
    status = ort->CreateStatus(ORT_INVALID_ARGUMENT, "AdaSnake: every input has rank 3");
  if (!status) status = ort->GetDimensions(info, dims, 3);
  ort->ReleaseTensorTypeAndShapeInfo(info);
  return status;
}

static OrtStatusPtr ORT_API_CALL compute(void *kernel, OrtKernelContext *context) {
  (void)kernel;
  Job job;
  int64_t dims[3];
  const OrtValue *input;
  const void *data;
  OrtStatusPtr status = ort->KernelContext_GetInput(context, 0, &input);
  if (!status) status = dimensions(input, dims);
  if (!status) status = ort->GetTensorData(input, &data);
  if (status) return status;
  job.x = data;
  for (int i = 0; i < PARAMETERS; ++i) {
    int64_t parameter_dims[3];
    status = ort->KernelContext_GetInput(context, (size_t)i + 1, &input);
    if (!status) status = dimensions(input, parameter_dims);
    if (!status) status = ort->GetTensorData(input, &data);
    if (status) return status;
    if ((parameter_dims[0] != 1 && parameter_dims[0] != dims[0]) || parameter_dims[1] != dims[1] ||
        parameter_dims[2] != 1)
      return ort->CreateStatus(ORT_INVALID_ARGUMENT,
                               "AdaSnake: x is (N, C, T) and each per-channel input (N or 1, C, 1)");
    job.parameters[i] = data;
    job.parameter_rows[i] = parameter_dims[0];
  }
  OrtValue *output;
  void *out;
  status = ort->KernelContext_GetOutput(context, 0, dims, 3, &output);
  if (!status) status = ort->GetTensorMutableData(output, &out);
  if (status) return status;
  job.y = out;
  job.channels = dims[1];
  job.steps = dims[2];
  size_t rows = (size_t)(dims[0] * dims[1]);
  if (rows == 0 || job.steps == 0) return NULL;
  return ort->KernelContext_ParallelFor(context, run_row, rows, 0, &job);
}

static OrtStatusPtr ORT_API_CALL create_kernel(const OrtCustomOp *op, const OrtApi *api,
                                              const OrtKernelInfo *info, void **kernel) {
  (void)op, (void)api, (void)info;
  *kernel = (void *)&ort; /* the kernel has no state: any handle that is not null */
  return NULL;
}
static void ORT_API_CALL destroy_kernel(void *kernel) { (void)kernel; }
static const char *ORT_API_CALL name(const OrtCustomOp *op) { (void)op; return "AdaSnake"; }
static const char *ORT_API_CALL provider(const OrtCustomOp *op) { (void)op; return "CPUExecutionProvider"; }
static ONNXTensorElementDataType ORT_API_CALL element_type(const OrtCustomOp *op, size_t index) {
  (void)op, (void)index;
  return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
}
static size_t ORT_API_CALL input_count(const OrtCustomOp *op) { (void)op; return 1 + PARAMETERS; }
static size_t ORT_API_CALL output_count(const OrtCustomOp *op) { (void)op; return 1; }
static OrtCustomOpInputOutputCharacteristic ORT_API_CALL required(const OrtCustomOp *op, size_t index) {
  (void)op, (void)index;
  return INPUT_OUTPUT_REQUIRED;
}
static OrtMemType ORT_API_CALL memory_type(const OrtCustomOp *op, size_t index) {
  (void)op, (void)index;
  return OrtMemTypeDefault;
}
static int ORT_API_CALL one(const OrtCustomOp *op) { (void)op; return 1; }
static int ORT_API_CALL last_version(const OrtCustomOp *op) { (void)op; return 1 << 30; }

static OrtCustomOp ada_snake;

/* Adds the operator's domain to options; an error status when this runtime's API is older than the
 * header's (onnxruntime answers no API table then, and the library is not used). */
OrtStatus *ORT_API_CALL RegisterCustomOps(OrtSessionOptions *options, const OrtApiBase *base) {
  ort = base->GetApi(ORT_API_VERSION);
  if (!ort) {
    const OrtApi *oldest = base->GetApi(1);
    return oldest->CreateStatus(ORT_FAIL, "AdaSnake: this onnxruntime is older than its C API header");
  }
  memset(&ada_snake, 0, sizeof ada_snake);
  ada_snake.version = ORT_API_VERSION;
  ada_snake.GetName = name;
  ada_snake.GetExecutionProviderType = provider;
  ada_snake.GetInputType = element_type;
  ada_snake.GetInputTypeCount = input_count;
  ada_snake.GetOutputType = element_type;
  ada_snake.GetOutputTypeCount = output_count;
  ada_snake.KernelDestroy = destroy_kernel;
  ada_snake.GetInputCharacteristic = required;
  ada_snake.GetOutputCharacteristic = required;
  ada_snake.GetInputMemoryType = memory_type;
  ada_snake.GetVariadicInputMinArity = one;
  ada_snake.GetVariadicInputHomogeneity = one;
  ada_snake.GetVariadicOutputMinArity = one;
  ada_snake.GetVariadicOutputHomogeneity = one;
  ada_snake.CreateKernelV2 = create_kernel;
  ada_snake.KernelComputeV2 = compute;
  ada_snake.GetStartVersion = one;
  ada_snake.GetEndVersion = last_version;
  /* The domain outlives every session made with these options: onnxruntime keeps a pointer to it. */
  OrtCustomOpDomain *domain;
  OrtStatusPtr status = ort->CreateCustomOpDomain(DOMAIN, &domain);
  if (!status) status = ort->CustomOpDomain_Add(domain, &ada_snake);
  if (!status) status = ort->AddCustomOpDomain(options, domain);
  return status;
}
