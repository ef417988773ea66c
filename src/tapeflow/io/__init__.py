"""`tf.io`: files, TFRecords and tf.train.Example parsing."""
