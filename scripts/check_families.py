#!/usr/bin/env python3
"""Checks that every tool registers each ONNX op in the file of its family (common/ADDING_AN_OP.md).

Reads the registration functions of common/eval/*.cc, shapeonnx/rules/*.cc, torchonnx/ops/*.cc
and propdag/ops/*.cc (`register_*` / `add_*` bodies, and the space-separated op lists they pass
to add_rules) and prints each op registered in another family's file, or in a file of no family.
A file <family>_<part>.cc belongs to <family>. Exits 1 on any finding not in KNOWN.

    scripts/check_families.py [REPO_ROOT]
"""
import pathlib
import re
import sys

FAMILIES = {
    "elementwise": "Abs Acos Acosh Add And Asin Asinh Atan Atanh BitShift BitwiseAnd BitwiseNot "
                   "BitwiseOr BitwiseXor Cast CastLike Ceil Clip Cos Cosh Div Equal Erf Exp Floor "
                   "Greater GreaterOrEqual IsInf IsNaN Less LessOrEqual Log Max Mean Min Mod Mul "
                   "Neg Not Or Pow PRelu Reciprocal Round Shrink Sign Sin Sinh Sqrt Sub Sum Tan "
                   "Trilu Where Xor",
    "activation": "Celu Elu Gelu HardSigmoid HardSwish Hardmax LeakyRelu LogSoftmax Mish Relu "
                  "Selu Sigmoid Softmax Softplus Softsign Tanh ThresholdedRelu",
    "reduce": "ArgMax ArgMin CumSum ReduceL1 ReduceL2 ReduceLogSum ReduceLogSumExp ReduceMax "
              "ReduceMean ReduceMin ReduceProd ReduceSum ReduceSumSquare TopK",
    "linalg": "Det Einsum Gemm MatMul",
    "conv": "Col2Im Conv ConvTranspose DeformConv",
    "pool": "AveragePool GlobalAveragePool GlobalLpPool GlobalMaxPool LpPool MaxPool MaxUnpool",
    "norm": "BatchNormalization GroupNormalization InstanceNormalization LRN LayerNormalization "
            "LpNormalization MeanVarianceNormalization",
    "shape": "Concat DepthToSpace Dropout Expand Flatten Identity Reshape SpaceToDepth Split "
             "Squeeze Tile Transpose Unsqueeze",
    "index": "CenterCropPad Compress Gather GatherElements GatherND NonZero OneHot Pad "
             "ReverseSequence Scatter ScatterElements ScatterND Slice Unique",
    "generator": "Bernoulli Constant ConstantOfShape EyeLike Multinomial RandomNormal "
                 "RandomNormalLike RandomUniform RandomUniformLike Range Shape Size",
    "resize": "AffineGrid GridSample Resize RoiAlign Upsample",
    "quant": "ConvInteger DequantizeLinear DynamicQuantizeLinear MatMulInteger QLinearConv "
             "QLinearMatMul QuantizeLinear",
    "recurrent": "GRU LSTM RNN",
    "signal": "BlackmanWindow DFT HammingWindow HannWindow MelWeightMatrix STFT",
    "training": "Adagrad Adam Momentum NegativeLogLikelihoodLoss SoftmaxCrossEntropyLoss",
    "text": "TfIdfVectorizer",
}
FAMILY_OF = {op: family for family, ops in FAMILIES.items() for op in ops.split()}

# Known exceptions, (tool, op): none.
KNOWN = set()

TOOLS = {"common": "eval", "shapeonnx": "rules", "torchonnx": "ops", "propdag": "ops"}
# Files of a folder that register no family: the registry and dispatch, helpers.
NOT_FAMILIES = {"eval", "rules", "util", "test_util", "kernels", "window"}
REGISTRATION = re.compile(r"^void (?:register|add)_\w+\([^)]*\) \{(.*?)^\}", re.S | re.M)
OP_LIST = re.compile(r'constexpr std::string_view k\w+ =\s*((?:"[^"]*"\s*)+);')


def registered_ops(source):
    ops = []
    for body in REGISTRATION.findall(source):
        ops += re.findall(r'"([A-Z][A-Za-z0-9]*)"', body)
    for pieces in OP_LIST.findall(source):
        ops += "".join(re.findall(r'"([^"]*)"', pieces)).split()
    return list(dict.fromkeys(ops))


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parents[1])
    unexpected = 0
    for tool, folder in TOOLS.items():
        for path in sorted((root / tool / folder).glob("*.cc")):
            if path.name.endswith("_test.cc"):
                continue
            family = path.stem.split("_")[0] if path.stem not in NOT_FAMILIES else path.stem
            for op in registered_ops(path.read_text()):
                want = FAMILY_OF.get(op)
                if want == family:
                    continue
                known = (tool, op) in KNOWN
                unexpected += not known
                where = f"{tool}/{folder}/{path.name}"
                print(f"{where}: {op} is in family {want or '(none listed)'}"
                      + (" (known)" if known else ""))
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
