"""Image input code the vision models share; no model of its own (harness/registry.py lists none here).

- decoders.py: JPEG bytes -> planar uint8 images on the device (nvImageCodec, torchvision's nvJPEG, PIL);
- resample.py: PIL's bilinear crop and resize as batched matrix products (`crop_resize`);
- normalize.py: the (x / scale - mean) / std affine crop_resize applies in its last pass;
- prefetch.py: the threads that prepare batches on side CUDA streams ahead of the step (`DeviceBatches`);
- backend.py: what `model.decode` means on a device, and model.decode=auto's probe; choices.py: its choices;
- optim.py: SGD (fused on CUDA) and LARS, ResNet-50's warm-up and polynomial decay, and their MLPerf keys.

Each model's own GPU batches live in its package: reference_models/resnet/decode.py,
ssd/decode.py, maskrcnn/decode.py (the COCO file reading both share: detection/decode.py).
"""
