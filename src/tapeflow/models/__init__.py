"""The model zoo: the seeds' networks, ready to build (``tapeflow.models.DenseNet()``)."""

from tapeflow.models.classifiers import MLP, CifarCNN, LSTMClassifier
from tapeflow.models.densenet import DenseBlock, DenseNet, DenseNetSequential
from tapeflow.models.revnet import Residual, ResidualInner, RevNet

__all__ = ["MLP", "CifarCNN", "DenseBlock", "DenseNet", "DenseNetSequential", "LSTMClassifier",
           "Residual", "ResidualInner", "RevNet"]
