"""`codesign cim eval`'s mismatch table says that its 0 row still has the converters, and gives the float model."""

from __future__ import annotations

from codesign.cim import CIMConfig
from codesign.cli import main


def test_the_no_mismatch_row_names_the_converters_and_the_float_accuracy_is_given(capsys, tmp_path):
    out = tmp_path / "run"
    assert main(["cim", "train", "--method", "standard", "--dataset", "digits", "--epochs", "1", "--quiet",
                 "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["cim", "eval", str(out), "--sweep", "mismatch", "--chips", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    conv = CIMConfig().converter
    (zero,) = [line for line in lines if line.split()[:1] == ["0"]]
    assert zero.endswith(f"<- no mismatch, the {conv.dac_bits}-bit DAC and {conv.adc_bits}-bit ADC only"), zero
    assert f"every chip with {conv.dac_bits}-bit DAC and {conv.adc_bits}-bit ADC" in lines[0]
    (floating,) = [line for line in lines if line.startswith("float model, no chip: ")]
    assert 50 < float(floating.split()[-2]) <= 100
