"""What the two MLPerf detection benchmarks (SSD, Mask R-CNN) share: the COCO 2017 layout read through
pycocotools (coco.py), its embedded generator (generate.py, shapes.py), COCOeval over every rank's
detections (cocoeval.py), the ResNet bodies (resnet.py) and the learning-rate schedule (schedule.py)."""
