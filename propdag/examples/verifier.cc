// A minimal verifier on top of propdag: tries IBP first (cheap), then CROWN, and prints
// "verified (ibp)", "verified (crown)" or "unknown", plus CROWN's bounds of every output.
//   example_verifier MODEL.onnx[.gz] PROPERTY.vnnlib[.gz] [K]
// With K, and when the installed package has the LibTorch engine (propdag::propdag_torch), it also
// cuts the property's box into K slices along its widest input, bounds all K in one call of the
// batched engine and prints, per output, the hull of the slices' bounds ("batched").
#include <cstdio>
#include <cstdlib>

#include "propdag/engine.h"
#include "propdag/model.h"
#include "propdag/verify.h"
#include "propdag/vnnlib.h"
#ifdef EXAMPLE_HAVE_TORCH
#include "propdag/torch/torch_engine.h"
#endif

namespace {

void print(const char* what, const std::vector<propdag::Interval>& bounds) {
  std::printf("%s\n", what);
  for (const propdag::Interval& b : bounds)
    for (Eigen::Index i = 0; i < b.size(); ++i)
      std::printf("  y%ld in [%g, %g]\n", long(i), b.lo[i], b.hi[i]);
}

#ifdef EXAMPLE_HAVE_TORCH
// K slices of `box` along its widest input, one per row, bounded in one call.
int batched(const propdag::Model& model, const propdag::Interval& box, long k) {
  Eigen::Index widest = 0;
  (box.hi - box.lo).maxCoeff(&widest);
  propdag::torch_engine::Boxes slices{box.lo.transpose().replicate(k, 1),
                                      box.hi.transpose().replicate(k, 1)};
  const double step = (box.hi[widest] - box.lo[widest]) / double(k);
  for (long s = 0; s < k; ++s) {
    slices.lo(s, widest) = box.lo[widest] + step * double(s);
    slices.hi(s, widest) = s + 1 == k ? box.hi[widest] : box.lo[widest] + step * double(s + 1);
  }
  auto engine = propdag::torch_engine::create(model, {"cpu", /*float32=*/false});
  if (!engine.ok())
    return std::fprintf(stderr, "example_verifier: %s\n", engine.error().str().c_str()), 2;
  auto out = (*engine)->output_bounds(slices, {propdag::Method::kCrown});
  if (!out.ok()) return std::fprintf(stderr, "example_verifier: %s\n", out.error().str().c_str()), 2;
  std::vector<propdag::Interval> hull;
  for (const propdag::torch_engine::Boxes& o : *out)  // K x numel: the worst slice per output
    hull.push_back({o.lo.colwise().minCoeff().transpose(), o.hi.colwise().maxCoeff().transpose()});
  print("batched", hull);
  return 0;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    std::fprintf(stderr, "usage: example_verifier MODEL SPEC [K]\n");
    return 2;
  }
  auto model = propdag::Model::load(argv[1]);
  if (!model.ok())
    return std::fprintf(stderr, "example_verifier: %s\n", model.error().str().c_str()), 2;
  auto spec = propdag::read_vnnlib(argv[2]);
  if (!spec.ok())
    return std::fprintf(stderr, "example_verifier: %s\n", spec.error().str().c_str()), 2;
  const char* verdict = "unknown";
  for (propdag::Method m : {propdag::Method::kIbp, propdag::Method::kCrown}) {
    auto r = propdag::verify(*model, *spec, {m});
    if (!r.ok()) return std::fprintf(stderr, "example_verifier: %s\n", r.error().str().c_str()), 2;
    if (r->verified) {
      verdict = m == propdag::Method::kIbp ? "verified (ibp)" : "verified (crown)";
      break;
    }
  }
  std::printf("%s\n", verdict);
  auto bounds = propdag::output_bounds(*model, spec->hull());
  if (!bounds.ok()) return 2;
  print("crown", *bounds);
  if (argc == 4) {
    const long k = std::strtol(argv[3], nullptr, 10);
    if (k < 1) return std::fprintf(stderr, "example_verifier: K must be a positive integer\n"), 2;
#ifdef EXAMPLE_HAVE_TORCH
    return batched(*model, spec->hull(), k);
#else
    std::fprintf(stderr, "example_verifier: built without the LibTorch engine\n");
    return 2;
#endif
  }
  return 0;
}
