"""What the MLPerf detection benchmarks (SSD, Mask R-CNN, RetinaNet) share: COCO JSON read through
pycocotools (coco.py) in COCO 2017's folder layout or another (files.py: RetinaNet's openimages-mlperf),
its embedded generator (generate.py, shapes.py), COCOeval over every rank's detections (cocoeval.py),
the ResNet and ResNeXt bodies (resnet.py) and the learning-rate schedule (schedule.py)."""
