module nugo/baselines

go 1.19
