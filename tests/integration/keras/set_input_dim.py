"""Writes a Keras to_json document with every Embedding layer's input_dim set to DIM (the tests'
fixtures have small vocabularies; a larger one lets the synthetic set's ids carry signal).

  set_input_dim.py IN.json OUT.json DIM
"""
import json
import sys

doc = json.load(open(sys.argv[1]))
for layer in doc["config"]["layers"]:
    if layer["class_name"] == "Embedding":
        layer["config"]["input_dim"] = int(sys.argv[3])
with open(sys.argv[2], "w") as f:
    json.dump(doc, f)
