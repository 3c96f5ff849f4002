"""placeholder replaced by the batching stage"""
