"""rlab-kuairand: the KuaiRand-Pure / 1K ranking benchmark for rlab."""
