# The user's own sitecustomize: must still run under trainscope (it sets a marker).
import os
os.environ["USER_SITECUSTOMIZE_RAN"] = "1"
