"""The layers a Keras to_json's `inbound_nodes` entry refers to, in either Keras's shape (Keras 2:
[layer, node, tensor, kwargs] lists; Keras 3: {"keras_history": [layer, node, tensor]}). Shared by
the Keras sides of the integration tests; imports nothing, so it runs under any environment."""


def histories(node):
    if isinstance(node, dict):
        if "keras_history" in node:
            yield node["keras_history"][0]
        for v in node.values():
            yield from histories(v)
    elif isinstance(node, list):
        if len(node) >= 3 and isinstance(node[0], str) and isinstance(node[1], int):
            yield node[0]  # Keras 2
        for v in node:
            yield from histories(v)


def embedding_input_dims(doc):
    """{input layer: the input_dim of the Embedding layers it feeds} of a to_json document."""
    dims = {}
    for layer in doc["config"]["layers"]:
        if layer["class_name"] == "Embedding":
            for source in histories(layer["inbound_nodes"]):
                dims[source] = layer["config"]["input_dim"]
    return dims
