// A minimal verifier on top of propdag: tries IBP first (cheap), then CROWN, and prints
// "verified (ibp)", "verified (crown)" or "unknown", plus CROWN's bounds of every output.
//   example_verifier MODEL.onnx[.gz] PROPERTY.vnnlib[.gz]
#include <cstdio>

#include "propdag/engine.h"
#include "propdag/model.h"
#include "propdag/verify.h"
#include "propdag/vnnlib.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: example_verifier MODEL SPEC\n");
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
  for (const propdag::Interval& b : *bounds)
    for (Eigen::Index i = 0; i < b.size(); ++i)
      std::printf("  y%ld in [%g, %g]\n", long(i), b.lo[i], b.hi[i]);
  return 0;
}
