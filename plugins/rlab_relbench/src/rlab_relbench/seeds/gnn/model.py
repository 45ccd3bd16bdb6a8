"""RelBench's reference GNN (its ``examples/model.py``), and a two-tower ranker on top of it.

``Model``: per-table column encoders over TensorFrames (relbench's ``HeteroEncoder``, a
pytorch-frame ResNet per table), a relative-time encoding added to every timed node
(``HeteroTemporalEncoder``), shallow id embeddings for the tables in ``shallow``, a
heterogeneous GraphSAGE (``HeteroGraphSAGE``) and an MLP head on the seed nodes.

``TwoTower``: the ``Model`` embeds each source entity from its sampled subgraph; every
destination gets its own column encoding plus a shallow id embedding; a pair scores the
dot product plus a per-destination bias, so one matrix product ranks the whole
destination table.
"""

from __future__ import annotations

import torch
from relbench.modeling.nn import HeteroEncoder, HeteroGraphSAGE, HeteroTemporalEncoder
from torch import Tensor
from torch_geometric.nn import MLP


class Model(torch.nn.Module):
    """Encoder, temporal encoding, shallow embeddings, GraphSAGE, head (RelBench's recipe)."""

    def __init__(
        self,
        data,
        col_stats: dict,
        *,
        channels: int,
        out_channels: int,
        num_layers: int,
        aggr: str,
        encoder_layers: int,
        head_layers: int,
        dropout: float,
        norm: str,
        shallow: list[str],
    ) -> None:
        super().__init__()
        self.encoder = HeteroEncoder(
            channels=channels,
            node_to_col_names_dict={t: data[t].tf.col_names_dict for t in data.node_types},
            node_to_col_stats=col_stats,
            torch_frame_model_kwargs={"channels": channels, "num_layers": encoder_layers},
        )
        self.temporal_encoder = HeteroTemporalEncoder(
            node_types=[t for t in data.node_types if "time" in data[t]], channels=channels
        )
        self.gnn = HeteroGraphSAGE(
            node_types=data.node_types,
            edge_types=data.edge_types,
            channels=channels,
            aggr=aggr,
            num_layers=num_layers,
        )
        self.head = MLP(
            channels,
            hidden_channels=channels,
            out_channels=out_channels,
            num_layers=head_layers,
            dropout=dropout,
            norm=norm,
        )
        self.embedding_dict = torch.nn.ModuleDict(
            {t: torch.nn.Embedding(data[t].num_nodes, channels) for t in shallow}
        )
        for emb in self.embedding_dict.values():
            torch.nn.init.normal_(emb.weight, std=0.1)

    def embed(self, batch, entity_table: str) -> Tensor:
        """The seed nodes' representations after the GNN (before the head)."""
        seed_time = batch[entity_table].seed_time
        x_dict = self.encoder(batch.tf_dict)
        rel_time_dict = self.temporal_encoder(seed_time, batch.time_dict, batch.batch_dict)
        for node_type, rel_time in rel_time_dict.items():
            x_dict[node_type] = x_dict[node_type] + rel_time
        for node_type, embedding in self.embedding_dict.items():
            x_dict[node_type] = x_dict[node_type] + embedding(batch[node_type].n_id)
        x_dict = self.gnn(
            x_dict,
            batch.edge_index_dict,
            batch.num_sampled_nodes_dict,
            batch.num_sampled_edges_dict,
        )
        return x_dict[entity_table][: seed_time.size(0)]

    def forward(self, batch, entity_table: str) -> Tensor:
        return self.head(self.embed(batch, entity_table))


class TwoTower(torch.nn.Module):
    """Source tower: ``Model`` on the source's subgraph; destination tower: columns + id.

    The destinations' id embedding is the model's shallow embedding of their table, so a
    destination is the same vector where it appears in a source's subgraph and as a target.
    """

    def __init__(self, model: Model, dst_table: str, prior: Tensor) -> None:
        super().__init__()
        self.model = model
        self.dst_table = dst_table
        self.dst_embedding = model.embedding_dict[dst_table]
        # a learned score per destination, started at log(1 + its train label count): the
        # ranker starts from popularity and learns each source's departures from it
        self.dst_bias = torch.nn.Parameter(prior.clone().float())

    def destinations(self, dst_tf) -> Tensor:
        """Every destination's vector: its encoded columns plus its shallow embedding."""
        x = self.model.encoder({self.dst_table: dst_tf})[self.dst_table]
        return x + self.dst_embedding.weight

    def forward(self, batch, src_table: str, dst_tf) -> Tensor:
        """Scores (batch, num_dst) of every destination for each seed source."""
        dot = self.model(batch, src_table) @ self.destinations(dst_tf).T
        return dot / self.dst_embedding.embedding_dim**0.5 + self.dst_bias  # scaled dot product
