"""The site's data: the steps, the example run with its snapshots, the head study, the texts' facts and the worked numbers, built from the engine's answer."""
